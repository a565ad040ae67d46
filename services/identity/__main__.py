"""`python -m services.identity` runs the service."""

from services.common.host import main
from services.identity.app import build_app

if __name__ == "__main__":
    main("identity", build_app)
