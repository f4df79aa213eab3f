"""JupyterHub configuration of tests/browser/test_browser_hub.py: the example
``jupyterhub_config.py`` at the top of the repository, loaded as a site would, with what a test on
one machine needs instead of a site's choices:

- a dummy login (any allowed user name with the test's password);
- ``SimpleLocalProcessSpawner``: each user's server runs as the current user with its own home in
  the test's folder. JupyterHub's default spawner needs a system account per student and, run as
  root (as CI does), switches to it; those accounts would need read access to the checkout and its
  venv, wherever CI cloned them. A spawner that keeps the current user needs neither, and the
  servers are still separate processes with separate homes, notebooks and kernels;
- the hub, its proxy and every server on 127.0.0.1, on ports the test chose, with the proxy found
  by the test (``configurable-http-proxy`` from npm, installed by .ci/run);
- JupyterLab settings that start kernels without a dialog (the news question is the example's
  to turn off), and the page's ``window.jupyterapp`` that the browser tests drive.

The test passes ports, folders and the user names in ``ATTENTION_LAB_HUB_*`` variables.
"""

import os
from pathlib import Path

c = get_config()  # noqa: F821
ROOT = Path(__file__).resolve().parents[2]
load_subconfig(str(ROOT / "jupyterhub_config.py"))  # noqa: F821  (the example, as a site runs it)

env = os.environ
work = Path(env["ATTENTION_LAB_HUB_WORK"])

c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = env["ATTENTION_LAB_HUB_PASSWORD"]
c.Authenticator.allowed_users = set(env["ATTENTION_LAB_HUB_USERS"].split(","))

c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = str(work / "home" / "{username}")

c.JupyterHub.bind_url = f"http://127.0.0.1:{env['ATTENTION_LAB_HUB_PORT']}"
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{env['ATTENTION_LAB_HUB_API_PORT']}"
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{env['ATTENTION_LAB_HUB_PROXY_API_PORT']}"
c.ConfigurableHTTPProxy.command = [env["ATTENTION_LAB_HUB_PROXY"]]
c.ConfigurableHTTPProxy.pid_file = str(work / "proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{work / 'hub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(work / "cookie_secret")
c.JupyterHub.pid_file = str(work / "hub.pid")

c.Spawner.ip = "127.0.0.1"
c.Spawner.args.extend(["--LabApp.expose_app_in_browser=True",
                       f"--LabApp.user_settings_dir={work / 'lab-settings'}",
                       "--LabApp.workspaces_dir=~/.lab-workspaces"])
if os.geteuid() == 0:
    c.Spawner.args.append("--allow-root")
c.Spawner.environment.update({"PYDEVD_DISABLE_FILE_VALIDATION": "1"})
