"""Grading: run students' notebooks as hostile code and grade them.

Commands: ``python -m attention_lab submit NOTEBOOK`` (:mod:`.submit`) and ``python -m
attention_lab grade SUBMISSIONS_DIR --out OUT_DIR`` (:mod:`.batch`). The engine, from the kernel
outwards: :mod:`attention_lab.exercises.probe` (the code sent into a kernel, the same that
``check()`` runs, so a notebook checks exactly as it is graded), :mod:`.channel` and
:mod:`.cases` (a kernel's harness conversation, the cases in the order asked), the sandbox
(:mod:`.sandbox_base`, :mod:`.sandbox`, :mod:`.namespaces`, :mod:`.launch`,
:mod:`.kernel_view`), :mod:`.runner` (one notebook, in named steps), :mod:`.submissions` (the
files, read without following links) and :mod:`.batch` (the ``grade`` command). The course:
:mod:`.assignments`, :mod:`.students` (:mod:`.lms`, :mod:`.roster`), :mod:`.late`,
:mod:`.written` (:mod:`.merge`), :mod:`.gradebook`, :mod:`.feedback`, :mod:`.summary`,
:mod:`.report`, :mod:`.outputs`, :mod:`.release`.
"""
