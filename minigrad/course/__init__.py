"""The course's own tools (outside the stage order; no stage and not the grader imports them).

- :mod:`minigrad.course.lab`: ``minigrad lab``, JupyterLab opened on the learner's workspace.
- :mod:`minigrad.course.doctor`: ``minigrad doctor``, what is installed and what to run to fix what is not.
"""
