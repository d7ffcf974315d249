# Both services, built with the official Swift image and run on a small Ubuntu
# 24.04 runtime. Noble's librdkafka is 2.3, which fixes the idempotent
# producer's fatal "sequence desynchronization" bug of Debian's 2.0.2.
FROM swift:6.3-noble AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends librdkafka-dev libmicrohttpd-dev libsqlite3-dev libpq-dev libcurl4-openssl-dev libssl-dev libvips-dev libarchive-dev pkg-config \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
COPY Sources ./Sources
COPY Plugins ./Plugins
COPY Tests ./Tests
COPY scripts ./scripts
RUN scripts/build-release \
 && mkdir -p /out \
 && cp .build/release/guidance-ingest .build/release/guidance-notifier .build/release/guidance-admin /out/

FROM swift:6.3-noble-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends librdkafka1 libmicrohttpd12t64 libsqlite3-0 libpq5 libcurl4t64 libssl3t64 libvips42t64 libarchive13t64 libxml2 curl ca-certificates tzdata \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --create-home --home-dir /var/lib/guidance guidance
COPY --from=build /out/ /usr/local/bin/
# No roster is baked in: mount the school's own at /roster (compose does, from
# ROSTER_PATH). Without one the services stop with a message naming ROSTER_DIR.
ENV ROSTER_DIR=/roster
USER guidance
WORKDIR /var/lib/guidance
EXPOSE 8080 8081
CMD ["guidance-ingest"]
