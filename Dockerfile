# One image for every service: `args: ["python", "-m", "services.<name>"]` picks the service.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY protos protos
COPY engine engine
COPY services services
COPY infra infra
RUN pip install --no-cache-dir "grpcio-tools>=1.85,<2" \
    && python -m infra.protogen \
    && pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim
COPY --from=build /install /usr/local
COPY --from=build /src/bg /app/bg
COPY --from=build /src/engine /app/engine
COPY --from=build /src/services /app/services
COPY --from=build /src/infra /app/infra
WORKDIR /app
ENV PYTHONPATH=/app PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
USER 10001:10001
EXPOSE 50051 50052 50053 50054 50055 50061 8081
CMD ["python", "-m", "services.gateway"]
