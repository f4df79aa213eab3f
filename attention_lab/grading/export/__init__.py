"""The lab's exercises on the platforms instructors already run.

* :mod:`.nbgrader`: ``python -m attention_lab release --for nbgrader COURSE_DIR`` writes the four
  exercise notebooks as nbgrader assignments (``source/<assignment>/``, cell metadata schema 3),
  with the lab's checks as autograded test cells (``check(..., strict=True)``) and the written
  answers as manually graded tasks whose rubric is the grader's mark scheme;
* :mod:`.gradescope`: ``python -m attention_lab release --for gradescope OUT.zip`` builds a
  Gradescope autograder whose ``run_autograder`` grades a submitted notebook with the lab's own
  grader (sandboxed kernels, the checks, the limits) and writes Gradescope's ``results.json``.

Both are built from the solution notebooks (``notebooks/exercises/solutions/``) and the
registry; neither hands a solution to a student (each export is searched for them).
"""
