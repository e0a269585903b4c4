"""Graded checks, one module per chapter: run by ``minigrad grade`` in the grader's own process,
asking a sandboxed child for the learner's answers (see :mod:`minigrad.grading.probing`)."""
