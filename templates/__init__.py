"""Jinja2 templates of the rendered reports; installed as the package data of opdrift.templates."""
