"""The commands of `report`, one module each (see reporter/cli.py)."""
