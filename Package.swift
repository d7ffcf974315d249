// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "guidance",
    platforms: [.macOS(.v15)],
    targets: [
        // C libraries from Debian, each behind one Swift module that alone imports it.
        .systemLibrary(
            name: "CRdKafka", pkgConfig: "rdkafka",
            providers: [.apt(["librdkafka-dev"])]),
        .systemLibrary(
            name: "CMicroHTTPD", pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(
            name: "CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(
            name: "CPostgres", pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]),
        .systemLibrary(
            name: "CCurl", pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(
            name: "CCrypto", pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]),
        // libvips is opened with the first photo made (dlopen, Sources/CVips/shim.h), not linked: a process
        // that makes none keeps its tree of libraries out of memory. The runtime needs libvips42.
        .systemLibrary(
            name: "CVips",
            providers: [.apt(["libvips-dev"])]),

        .systemLibrary(
            name: "CArchive", pkgConfig: "libarchive",
            providers: [.apt(["libarchive-dev"])]),

        // glibc's malloc.h (arena limit, trim), not exported by Swift's Glibc module.
        .systemLibrary(name: "CMalloc"),

        .target(name: "Common", dependencies: ["CMalloc"]),
        .target(name: "Kafka", dependencies: ["CRdKafka", "Common"]),
        // librdkafka's mock cluster, for guidance-dev and the tests only.
        .target(name: "KafkaMock", dependencies: ["Kafka", "CRdKafka", "Common"]),
        .target(name: "HTTP", dependencies: ["CMicroHTTPD", "Common"]),
        .target(name: "Crypto", dependencies: ["CCrypto"]),
        .target(name: "Curl", dependencies: ["CCurl", "Common"]),
        .target(name: "Images", dependencies: ["CVips", "Common"]),
        .target(name: "Guidance", dependencies: ["Crypto", "Common"]),
        // What a school uploads (XLSX workbooks, CSV as Korean Excel saves it, ZIPs of photos) as rows and files.
        .target(name: "Uploads", dependencies: ["CArchive", "Guidance", "Common"]),

        .target(name: "Store", dependencies: ["CSQLite", "CPostgres", "Guidance", "Crypto", "Common"]),
        // Dead letters: what the notifier adds to a message it cannot apply, and the replay `guidance-admin` runs.
        .target(name: "DeadLetters", dependencies: ["Kafka", "Guidance", "Common"]),
        // Sessions in the session log on Kafka; who may call a route, attempts and the access record; what a service is wired
        // from (its start-up steps and parts, its mail, its calls to the other service).
        .target(name: "Sessions", dependencies: ["Crypto", "Kafka", "Guidance", "Common"]),
        .target(name: "Access", dependencies: ["Sessions", "HTTP", "Kafka", "Guidance", "Common"]),
        .target(name: "Wiring", dependencies: ["Access", "Sessions", "HTTP", "Curl", "Kafka", "Guidance", "Common"]),
        // The pages' scripts, style sheets and icons are real files in each
        // target's Assets/ folder, built into the binary by EmbedFiles.
        .target(
            name: "Web", dependencies: ["HTTP", "Crypto", "Images", "Guidance", "Access", "Sessions", "Wiring", "Common"],
            exclude: ["Assets"], plugins: ["EmbedFiles"]),
        .target(
            name: "Ingest",
            dependencies: ["Kafka", "HTTP", "Guidance", "Access", "Sessions", "Wiring", "Web", "Uploads", "Images", "Common"],
            exclude: ["Assets"], plugins: ["EmbedFiles"]),
        .target(
            name: "Notifier",
            dependencies: [
                "Kafka", "HTTP", "Curl", "Crypto", "Guidance", "Store", "DeadLetters", "Access", "Sessions", "Wiring", "Web", "Common"
            ]),
        .executableTarget(name: "embed-files"),
        .plugin(name: "EmbedFiles", capability: .buildTool(), dependencies: ["embed-files"]),

        .executableTarget(name: "guidance-ingest", dependencies: ["Ingest", "Common"]),
        .executableTarget(name: "guidance-notifier", dependencies: ["Notifier", "Common"]),
        .executableTarget(
            name: "guidance-bench",
            dependencies: ["Ingest", "Notifier", "Sessions", "Store", "Kafka", "KafkaMock", "HTTP", "Guidance", "Curl", "Common"]),
        .executableTarget(
            name: "guidance-admin",
            dependencies: ["Ingest", "Store", "DeadLetters", "Access", "Sessions", "Kafka", "Guidance", "Uploads", "Crypto", "Common"]),
        .executableTarget(name: "guidance-dev", dependencies: ["Ingest", "Notifier", "Kafka", "KafkaMock", "HTTP", "Guidance", "Common"]),

        .target(name: "TestSupport", dependencies: ["Kafka", "KafkaMock", "Common"], path: "Tests/TestSupport"),
        .testTarget(name: "CommonTests", dependencies: ["Common", "TestSupport"]),
        .testTarget(name: "CryptoTests", dependencies: ["Crypto"]),
        .testTarget(name: "CurlTests", dependencies: ["Curl", "Common", "TestSupport"]),
        .testTarget(name: "ImagesTests", dependencies: ["Images", "TestSupport"]),
        .testTarget(name: "KafkaTests", dependencies: ["Kafka", "KafkaMock", "TestSupport"]),
        .testTarget(
            name: "WebTests",
            dependencies: [
                "Web", "Access", "Sessions", "Wiring", "HTTP", "Guidance", "Crypto", "Common", "Kafka", "KafkaMock", "TestSupport"
            ]),
        .testTarget(name: "HTTPTests", dependencies: ["HTTP", "Common", "TestSupport"]),
        .testTarget(name: "GuidanceTests", dependencies: ["Guidance", "Crypto", "Common"]),
        .testTarget(name: "UploadsTests", dependencies: ["Uploads", "Guidance", "Crypto", "Common", "TestSupport"]),
        .testTarget(name: "IngestTests", dependencies: ["Ingest", "Kafka", "KafkaMock", "Guidance", "Crypto", "TestSupport"]),
        .testTarget(name: "StoreTests", dependencies: ["Store", "Guidance"]),
        .testTarget(
            name: "NotifierTests",
            dependencies: [
                "Notifier", "Ingest", "Store", "DeadLetters", "Kafka", "KafkaMock", "Guidance", "Crypto", "HTTP", "Access", "Sessions",
                "Wiring",
                "TestSupport"
            ])
    ],
    swiftLanguageModes: [.v6]
)
