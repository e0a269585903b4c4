"""Test-only devices and stand-ins that the test suites register; no stage imports this package."""
