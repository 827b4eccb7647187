"""The downstream example workflows; installed as the package data of bot.examples (`opdrift init` writes them)."""
