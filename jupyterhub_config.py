# attention-lab on JupyterHub: an example configuration for a class.
#
#   pip install -r requirements.txt        # JupyterHub (pinned), the lab and everything it needs
#   npm install -g configurable-http-proxy@4.6.3
#   jupyterhub -f jupyterhub_config.py     # from a checkout; students open http://HOST:8000
#
# Each student logs in, gets a JupyterLab server of their own with their own copy of the
# student bundle's notebooks/ (made on their first start; a later start adds what it lacks and
# never replaces a file: their work stays theirs) and opens the level notebooks; the explorers,
# exercises and `python -m attention_lab submit` work as on a laptop. What students get is the
# bundle of `python -m attention_lab release`, built when the hub starts: never this checkout's
# notebooks/exercises/solutions/.
# Everything specific to a site is marked SITE below. The test of this file
# (tests/browser/test_browser_hub.py) runs it on 127.0.0.1 with a dummy login and servers under
# the current user, three students at once.
#
# When a class outgrows one machine, run the same lab on Kubernetes with Zero to JupyterHub
# (z2jh.jupyter.org): build the single-user image from the student bundle, never from this
# repository (which holds the solutions): `python -m attention_lab release image/ && repo2docker
# image/` (repo2docker reads the bundle's environment.yml: the same pins, JupyterHub's single-user
# server included) and put that image, the authenticator and the resources below in the chart's
# config.yaml (singleuser.image, hub.config, singleuser.memory, singleuser.cpu). See
# docs/instructors/jupyterhub.md.

import os
import subprocess
import sys
from pathlib import Path

from tornado.web import HTTPError

c = get_config()  # noqa: F821  (defined by JupyterHub when it loads this file)

LAB = Path(__file__).resolve().parent  # the checkout this file belongs to
sys.path.insert(0, str(LAB))
from attention_lab.grading.release import ReleaseError, student_copy  # noqa: E402

# SITE: where the student bundles are built (one folder per version of the lab). Students'
# servers read their package and notebooks from there, so it must be readable by them, and
# outside this checkout, which must not be (`chmod 700`: it holds the solutions, in
# notebooks/exercises/solutions/, tests/ and the git history).
BUNDLES = Path(os.environ.get("ATTENTION_LAB_BUNDLES", LAB / "build" / "student-bundles"))
try:
    BUNDLE = student_copy(BUNDLES)  # built now if the lab changed since the last start
except ReleaseError as exc:  # e.g. a stale student notebook: no hub rather than a wrong bundle
    sys.exit(f"attention-lab: cannot build the student bundle: {exc}")

# SITE: how students log in. PAM (accounts of this machine) is JupyterHub's default; for a course,
# an LMS login (LTI 1.3: ltiauthenticator) or your university's OAuth (oauthenticator) is usual.
# c.JupyterHub.authenticator_class = "ltiauthenticator.lti13.auth.LTI13Authenticator"
c.Authenticator.allow_all = False
c.Authenticator.admin_users = set()  # SITE: instructors' user names
# c.Authenticator.allowed_users = {"ada", "bob"}  # SITE: or allow a whole LMS course

# SITE: where the hub listens (behind your HTTPS proxy, or set ssl_cert / ssl_key here).
c.JupyterHub.bind_url = "http://:8000"

# Students' servers: JupyterLab, started in the student's home with the lab's notebooks in it,
# by the hub's own Python (the venv's, whether or not it is on the hub's PATH; students' accounts
# need read access to it)
c.Spawner.cmd = [sys.executable, "-m", "jupyterhub.singleuser"]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.environment = {
    # the bundle's package for every kernel: the code the bundle's notebooks were made with
    "PYTHONPATH": str(BUNDLE),
    # JupyterLab's settings for students, from the bundle: no news pop-up, and nbgrader (in the
    # venv for the instructors' nbgrader route) neither in their JupyterLab nor in their server
    # (for that route on this hub, students need nbgrader's Assignments tab: drop this line)
    "JUPYTER_CONFIG_PATH": str(BUNDLE / "jupyter-config"),
    # one math thread per kernel: many students share the machine's cores
    "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
    # `python` in a terminal is the lab's: the exercise notebooks' hand-in command runs it
    "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin",
                             "/bin"]),
}
# JupyterLab's terminal: bash, not as a login shell, whose /etc/profile would reset that PATH
c.Spawner.args = ["--ServerApp.terminado_settings=shell_command=/bin/bash"]
# SITE: resources per student (honoured by spawners that can enforce them: systemdspawner,
# dockerspawner, kubespawner on Zero to JupyterHub). A student's server with one level notebook
# open uses about 415 MiB, with 01, 03 and 04 open 945 MiB (docs/instructors/sizing.md).
c.Spawner.mem_limit = "2G"
c.Spawner.cpu_limit = 1.0
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120


#: where a student's copy goes when their home's notebooks/ cannot take it (a file of theirs)
ELSEWHERE = "attention-lab-notebooks"
NOTE = f"""# Why the lab's notebooks are here

The hub puts the lab's notebooks in `notebooks/` in your home, but could not put them there
({{}}), so they are here, in `{ELSEWHERE}/`: work here (hand-ins work from here too).

To have them in `notebooks/` instead, rename or remove what has that name, then restart your
server (File > Hub Control Panel, Stop My Server, Start My Server) and move your work there.
"""
#: run by the students' Python as the student, in their home (argv: the bundle's notebooks/, this
#: checkout, ELSEWHERE and the NOTE left there)
HAND_OUT = """import os, shutil, sys
src, lab, elsewhere, note = sys.argv[1:]
print("reads the checkout" if os.access(lab, os.X_OK) else "")
def hand_out(dest):
    try:
        shutil.copytree(src, dest, dirs_exist_ok=True,  # what the copy lacks; never a file it has
                        copy_function=lambda s, d: os.path.lexists(d) or shutil.copy2(s, d))
    finally:
        if os.path.isdir(dest):
            os.chmod(dest, 0o700)
try:
    hand_out("notebooks")
except OSError as exc:
    hand_out(elsewhere)
    with open(os.path.join(elsewhere, "NOTE.md"), "w") as out:
        out.write(note.format(exc))
    print("elsewhere:", exc)
"""


def copy_notebooks(spawner):
    """Give the student their own copy of the bundle's notebooks/, readable by them alone (homes
    made by useradd are open to all); each later start adds what their copy lacks (a notebook of an
    update of the course, one they deleted) and never replaces a file they have. A hub run
    as root copies as the student, with the Python their server runs: a link in their home leads
    nowhere they could not write, and a Python their account cannot run, or a checkout (with its
    solutions) it can read, stops the start with what to do. A home whose notebooks/ cannot take
    the copy (a file of theirs of that name) gets it in ELSEWHERE/ with a NOTE; one that can take
    neither stops the start with a message the student sees."""
    home = Path(getattr(spawner, "home_dir", "") or Path(f"~{spawner.user.name}").expanduser())
    home.mkdir(parents=True, exist_ok=True)
    owner = home.owner() if os.geteuid() == 0 and home.owner() != "root" else None
    python = spawner.cmd[0]
    try:
        done = subprocess.run(
            [python, "-I", "-c", HAND_OUT, BUNDLE / "notebooks", LAB, ELSEWHERE, NOTE], cwd=home,
            user=owner, group=owner and home.group(), extra_groups=owner and [], env={},
            capture_output=True, text=True, timeout=120)
    except OSError as exc:
        raise RuntimeError(
            f"attention-lab: {owner or 'the hub'}'s account cannot run {python} ({exc.strerror}); "
            f"students' servers run it as their own accounts, so make the venv with a Python "
            f"every account can run (e.g. /usr/bin/python3 -m venv /opt/attention-lab, not one "
            f"under /root such as pyenv's) and start the hub from it: see "
            f"docs/instructors/jupyterhub.md") from None
    if owner and "reads the checkout" in done.stdout:
        raise RuntimeError(
            f"attention-lab: {owner}'s account can read this checkout, {LAB}, which holds the "
            f"solutions (notebooks/exercises/solutions/, tests/, the git history); students' "
            f"servers need only the venv and the student bundles ({BUNDLES}): keep both outside "
            f"it and make it private, chmod 700 {LAB}: see docs/instructors/jupyterhub.md")
    if done.returncode:  # the student sees why their server did not start on the hub's page
        why = done.stderr.strip().rsplit("\n", 1)[-1]
        refused = HTTPError(500, "%s", f"attention-lab: the lab's notebooks could not be put in "
                            f"your home, in notebooks/ or {ELSEWHERE}/ ({why}); show this to "
                            f"your instructor")
        refused.jupyterhub_message = refused.args[0]
        raise refused
    if "elsewhere:" in done.stdout:  # e.g. a file of the student's named notebooks
        spawner.log.warning("attention-lab: %s's notebooks are in ~/%s/ (%s)", spawner.user.name,
                            ELSEWHERE, done.stdout.split("elsewhere: ", 1)[1].strip())


c.Spawner.pre_spawn_hook = copy_notebooks

# Servers nobody used for an hour are stopped by JupyterHub's idle culler, a separate package:
#   pip install jupyterhub-idle-culler   (then uncomment)
# c.JupyterHub.services = [{"name": "idle-culler", "command": [
#     "python3", "-m", "jupyterhub_idle_culler", "--timeout=3600"]}]
# c.JupyterHub.load_roles = [{"name": "idle-culler", "services": ["idle-culler"],
#                             "scopes": ["list:users", "read:users:activity", "read:servers",
#                                        "delete:servers"]}]
