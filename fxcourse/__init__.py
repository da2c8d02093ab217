"""Helpers shared by the course notebooks."""
