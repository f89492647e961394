# Latchkey as a container: a static binary on distroless, as a non-root user, meant to run with a
# read-only root filesystem (docker run --read-only, or read_only: true in compose) and its data
# on a volume. The build stage runs scripts/build.sh, the same script CI runs, which also
# smoke-tests the binary.
#
#   docker build -t latchkey .
#   docker run --read-only -v latchkey-data:/data -e LATCHKEY_MASTER_KEY_FILE=/run/secrets/master.key ... latchkey
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN OUT=/out/latchkey scripts/build.sh

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/latchkey /usr/local/bin/latchkey
# distroless's nonroot user (65532); /data is the volume for SQLite (unused with PostgreSQL).
USER 65532:65532
VOLUME ["/data"]
EXPOSE 8080 8090 8070 9090
ENV LATCHKEY_DATA_DIR=/data
ENTRYPOINT ["/usr/local/bin/latchkey"]
CMD ["serve", "--api-addr", "0.0.0.0:8080", "--proxy-addr", "0.0.0.0:8090", "--dashboard-addr", "", "--metrics-addr", "0.0.0.0:9090"]
