"""`python -m services.analysis` runs the service."""

from services.analysis.app import build_app
from services.common.host import main

if __name__ == "__main__":
    main("analysis", build_app)
