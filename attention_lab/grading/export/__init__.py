"""The lab's exercises on the platforms instructors already run (``release --for``):
:mod:`.nbgrader` (assignments whose autograded test cells are the lab's checks) and
:mod:`.gradescope` (an autograder that runs the lab's own grader). Both are built from the
solution notebooks and the registry; neither hands a solution to a student.
"""
