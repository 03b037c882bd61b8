"""The time steppers, registered by name."""
