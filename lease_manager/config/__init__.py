"""Configuration: the option schema, ini loading and the core's options."""
