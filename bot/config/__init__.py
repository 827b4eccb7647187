"""The bot's config file, parsed and checked."""
