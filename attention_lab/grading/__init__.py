"""Grading: run students' notebooks as hostile code and grade them.

Commands: ``python -m attention_lab submit NOTEBOOK`` (:mod:`.submit`) and ``python -m
attention_lab grade SUBMISSIONS_DIR --out OUT_DIR`` (:mod:`.batch`). The modules, from the kernel
outwards:

* :mod:`attention_lab.exercises.probe` (the student side's, which never imports this package):
  the code sent into a student's kernel (calls an answer on the grader's cases and records its
  raw outputs as JSON; nothing an answer could use), the same that ``check()`` runs, so that a
  notebook checks exactly as it is graded;
* :mod:`.channel`: the grader's side of a kernel's harness conversation and its stderr (socket
  pairs, bounded, nothing on disk); :mod:`.cases`: the cases of a run, in the order asked;
* :mod:`.sandbox_base`, :mod:`.sandbox`, :mod:`.namespaces`, :mod:`.launch`, :mod:`.kernel_view`:
  how a kernel is confined and its processes stopped (the interface the runner calls; which
  sandbox a job gets; bubblewrap namespaces, job cgroups and hard limits; the package as a graded
  kernel sees it);
* :mod:`.runner`: one notebook in sandboxed kernels, in named steps (prepare, start, run cells,
  ask for the answers, recover);
* :mod:`.submissions`: the folder and its files, read without following links, bounded;
* :mod:`.batch`: the ``grade`` command: discovery, parsing, the batch, judging against the
  references of :mod:`attention_lab.exercises`, the report (:mod:`.report`, the grades;
  :mod:`.outputs`, every file it writes);
* :mod:`.submit`: the ``submit`` command;
* the course: :mod:`.assignments`, :mod:`.students` (with :mod:`.lms`, the names of Moodle's and
  Canvas's downloads, and :mod:`.roster`, the class list), :mod:`.late` (due dates, the late
  policy), :mod:`.written` (with :mod:`.merge`, the ``merge`` command), :mod:`.gradebook` (also
  the term's and the LMS import files), :mod:`.feedback`, :mod:`.summary` (the class statistics
  page), :mod:`.release`.
"""
