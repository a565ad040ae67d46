# One image for every service: `args: ["python", "-m", "services.<name>"]` picks the service.
# The source folders the services import (tests/infra/test_image.py keeps this list whole:
# the bots import client/, the analysis and the bots evaluator/) sit in /app, first on the
# path, with their data files (migrations, the browser client, the networks' weights); the
# dependencies come from the build stage's install.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY protos protos
COPY engine engine
COPY evaluator evaluator
COPY wire wire
COPY services services
COPY client client
COPY infra infra
COPY loadtests loadtests
COPY k8s/base/dashboards k8s/base/dashboards
RUN pip install --no-cache-dir "grpcio-tools>=1.85,<2" "mypy-protobuf>=5.1,<6" \
    && python -m infra.tools.protogen \
    && pip install --no-cache-dir --prefix=/install . \
    && pip install --no-cache-dir --prefix=/install-load ".[load]"

# The sources every image runs, first on the path, with their data files.
FROM python:3.11-slim AS app
COPY --from=build /src/bg /app/bg
COPY --from=build /src/engine /app/engine
COPY --from=build /src/evaluator /app/evaluator
COPY --from=build /src/wire /app/wire
COPY --from=build /src/services /app/services
COPY --from=build /src/client /app/client
COPY --from=build /src/infra /app/infra
WORKDIR /app
ENV PYTHONPATH=/app PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1

# The load test's image (`docker build --target loadtest -t bgcluster-loadtest .`): Locust's
# master and workers of k8s/loadtest; the capacity report reads the overview dashboard.
FROM app AS loadtest
COPY --from=build /install-load /usr/local
COPY --from=build /src/loadtests /app/loadtests
COPY --from=build /src/k8s/base/dashboards /app/k8s/base/dashboards
USER 10001:10001
EXPOSE 8089 5557
CMD ["python", "-m", "loadtests.run", "--help"]

# The services' image (the default target).
FROM app
COPY --from=build /install /usr/local
USER 10001:10001
EXPOSE 50051 50052 50053 50054 50055 50061 8081
CMD ["python", "-m", "services.gateway"]
