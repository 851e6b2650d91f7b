// swift-tools-version: 6.1
// jobrun — batch sync and cache-maintenance jobs over a Telegram-style Postbox and MediaBox.
//
// Dependencies point one way:
//   jobrun → Jobs → CloudCore → MediaBox → Postbox → CSQLite
// CloudServer (the reference `cloudd`) shares only CloudProtocol and CloudCrypto with the client.
import PackageDescription

let package = Package(
    name: "jobrun",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "jobrun", targets: ["jobrun"]),
        .executable(name: "cloudd", targets: ["cloudd"]),
        .executable(name: "jobrun-bench", targets: ["jobrun-bench"]),
        .library(name: "Postbox", targets: ["Postbox"]),
        .library(name: "MediaBox", targets: ["MediaBox"]),
        .library(name: "CloudCore", targets: ["CloudCore"]),
        .library(name: "CloudServer", targets: ["CloudServer"]),
        .library(name: "Jobs", targets: ["Jobs"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.0.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
        // Hummingbird's own dependencies, named because the reference server uses their types.
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.0.0"),
    ],
    targets: [
        // System libraries (Debian: libsqlite3-dev, libssl-dev, libcurl4-openssl-dev).
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // Image resizing for derived representations; Jobs only. Nothing is linked: the process
        // that makes a representation loads libvips (Debian: libvips42) then (see shim.h).
        .systemLibrary(name: "CVips"),
        // JPEG encoding of the reference server's photos (Debian: libjpeg62-turbo-dev).
        .systemLibrary(name: "CJPEG", pkgConfig: "libjpeg", providers: [.apt(["libjpeg62-turbo-dev"])]),
        // Linux system calls glibc does not wrap (openat2).
        .systemLibrary(name: "CLinux"),

        // The one way to open a path below a directory: no link followed, nothing outside it
        // reached, no FIFO or device opened as a file, no hard-linked file written.
        .target(name: "ConfinedFiles", dependencies: ["CLinux"]),

        // Storage engine: ValueBox on SQLite, binary encoding, tables, transactions.
        .target(name: "Postbox", dependencies: ["CSQLite", "COpenSSL", "ConfinedFiles"]),
        // ValueBox on PostgreSQL: Postbox's seam on a shared server. Its own target, so Postbox
        // (and everything that only needs SQLite) never links SwiftNIO.
        .target(
            name: "PostboxPostgres",
            dependencies: [
                "Postbox",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // File cache of media resources; fetching is injected, no networking here.
        .target(name: "MediaBox", dependencies: ["Postbox", "ConfinedFiles", "CLinux", "COpenSSL"]),
        // Wire types shared by client and server (no transport, no storage).
        .target(name: "CloudProtocol"),
        // AES-256-IGE, AES-256-CTR, SHA-256 over libcrypto; shared by client and server.
        .target(name: "CloudCrypto", dependencies: ["COpenSSL"]),
        // Client: transport (libcurl multi), resources, MultipartFetch/Upload, revalidation, sync.
        .target(name: "CloudCore", dependencies: ["MediaBox", "Postbox", "ConfinedFiles", "CloudProtocol", "CloudCrypto", "CCurl"]),
        // Job files, job kinds, scheduler, locks, logs, metrics.
        .target(
            name: "Jobs",
            dependencies: [
                "CloudCore", "CloudProtocol", "MediaBox", "Postbox", "PostboxPostgres", "ConfinedFiles", "CVips",
                .product(name: "Yams", package: "Yams"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // Reference cloud server (in-process for tests, `cloudd` executable for everyone else).
        .target(
            name: "CloudServer",
            dependencies: [
                "CloudProtocol", "CloudCrypto", "CJPEG",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .executableTarget(
            name: "cloudd",
            dependencies: [
                "CloudServer", "CloudProtocol", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        // The CLI. It does not link the reference server: `jobrun demo` starts the `cloudd`
        // executable built beside it. It opens no store; it prints the lower layers' value types
        // (usage reports, run records, upload items) that Jobs hands it.
        .executableTarget(
            name: "jobrun",
            dependencies: [
                "Jobs", "CloudCore", "MediaBox", "Postbox", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        // Benchmarks against peers (raw SQLite, find, curl, aria2c) in one invocation.
        .executableTarget(
            name: "jobrun-bench",
            dependencies: [
                "Jobs", "CloudCore", "CloudProtocol", "CloudCrypto", "ConfinedFiles", "MediaBox", "Postbox", "PostboxPostgres", "CSQLite",
                "CloudServer", "ServerFixtures",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        // Child processes for crash and concurrency tests (SIGKILL mid-transaction, two writers), and
        // for the test fixtures' own exit behaviour.
        .executableTarget(name: "jobrun-testkit", dependencies: ["Postbox", "PostboxPostgres", "MediaBox", "CloudCore", "CloudProtocol", "ServerFixtures"]),

        // Real servers and hosts (PostgreSQL, network namespaces) for tests and the benchmarks; no XCTest.
        .target(name: "ServerFixtures"),
        .target(name: "TestSupport", dependencies: ["ServerFixtures", "MediaBox", "Postbox", "Jobs"], path: "Tests/TestSupport"),
        .testTarget(name: "ConfinedFilesTests", dependencies: ["ConfinedFiles"]),
        .testTarget(name: "PostboxTests", dependencies: ["Postbox", "PostboxPostgres", "CSQLite", "TestSupport"]),
        .testTarget(name: "MediaBoxTests", dependencies: ["CLinux", "ConfinedFiles", "MediaBox", "Postbox", "TestSupport"]),
        .testTarget(
            name: "CloudCoreTests",
            dependencies: ["CloudCore", "CloudProtocol", "CloudCrypto", "CloudServer", "ConfinedFiles", "MediaBox", "Postbox", "TestSupport"]),
        .testTarget(
            name: "CloudServerTests",
            dependencies: ["CloudServer", "CloudProtocol", "CloudCrypto", "TestSupport", .product(name: "NIOCore", package: "swift-nio")]),
        .testTarget(
            name: "JobsTests",
            dependencies: [
                "Jobs", "CloudCore", "CloudProtocol", "CloudServer", "MediaBox", "Postbox", "PostboxPostgres", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            exclude: ["ExampleKind/count-messages.yaml"]),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "CloudServer", "CloudCore", "CloudProtocol", "CloudCrypto", "ConfinedFiles", "Postbox", "PostboxPostgres", "MediaBox", "Jobs",
                "TestSupport",
            ]),
    ]
)
