"""Test-only devices and stand-ins the test suites register; no stage imports this package."""
