"""creditlens's configuration: the settings model and the accounts file, read once."""
