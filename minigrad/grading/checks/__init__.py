"""Graded checks, one module per chapter; run by ``minigrad grade`` through pytest."""
