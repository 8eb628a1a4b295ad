"""The package as users install it: test_user_project.py runs user_project/ in a venv of its own."""

collect_ignore = ["user_project"]  # a user's tests, run by the outer test in its own venv, not here
