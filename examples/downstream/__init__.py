"""The downstream example workflows; installed as the package data of opdrift.examples (`opdrift init` writes them)."""
