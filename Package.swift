// swift-tools-version: 6.1
// jobrun — batch sync and cache-maintenance jobs over a Telegram-style Postbox and MediaBox.
//
// Dependencies point one way:
//   jobrun → Jobs → CloudCore → MediaBox → Postbox → CSQLite
// CloudServer (the reference `cloudd`) shares only CloudProtocol and CloudCrypto with the client.
import PackageDescription

/// For the modules on the path of every `jobrun` invocation: concrete generic types (a
/// `[String: LogValue]`, a `Param<[PeerStorageClass: Duration]>`) get their metadata from
/// direct accessors that pass the conformances the compiler already knows, instead of from
/// mangled names that the runtime resolves by scanning every conformance record of the process
/// (SwiftNIO and Foundation included) once per new type. An idle cron run paid about a
/// millisecond of CPU for those scans; the accessors cost a little code size.
let startupSettings: [SwiftSetting] = [.unsafeFlags(["-Xfrontend", "-disable-concrete-type-metadata-mangled-name-accessors"])]

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
    ],
    targets: [
        // System libraries (Debian: libsqlite3-dev, libssl-dev, libcurl4-openssl-dev).
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // Image resizing for derived representations (Debian: libvips-dev); Jobs only.
        .systemLibrary(name: "CVips", pkgConfig: "vips", providers: [.apt(["libvips-dev"])]),
        // JPEG encoding of the reference server's photos (Debian: libjpeg62-turbo-dev).
        .systemLibrary(name: "CJPEG", pkgConfig: "libjpeg", providers: [.apt(["libjpeg62-turbo-dev"])]),
        // Linux system calls glibc does not wrap (openat2).
        .systemLibrary(name: "CLinux"),

        // The one way to open a path below a directory: no link followed, nothing outside it
        // reached, no FIFO or device opened as a file, no hard-linked file written.
        .target(name: "ConfinedFiles", dependencies: ["CLinux"]),

        // Storage engine: ValueBox on SQLite, binary encoding, tables, transactions.
        .target(name: "Postbox", dependencies: ["CSQLite"], swiftSettings: startupSettings),
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
        .target(name: "MediaBox", dependencies: ["Postbox"], swiftSettings: startupSettings),
        // Wire types shared by client and server (no transport, no storage).
        .target(name: "CloudProtocol"),
        // AES-256-IGE, AES-256-CTR, SHA-256 over libcrypto; shared by client and server.
        .target(name: "CloudCrypto", dependencies: ["COpenSSL"]),
        // Client: transport (libcurl multi), resources, MultipartFetch/Upload, revalidation, sync.
        .target(name: "CloudCore", dependencies: ["MediaBox", "Postbox", "CloudProtocol", "CloudCrypto", "CCurl"], swiftSettings: startupSettings),
        // Job files, job kinds, scheduler, locks, logs, metrics.
        .target(
            name: "Jobs",
            dependencies: [
                "CloudCore", "MediaBox", "Postbox", "PostboxPostgres", "CVips",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "Logging", package: "swift-log"),
            ], swiftSettings: startupSettings),
        // Reference cloud server (in-process for tests, `cloudd` executable for everyone else).
        .target(
            name: "CloudServer",
            dependencies: [
                "CloudProtocol", "CloudCrypto", "CJPEG",
                .product(name: "Hummingbird", package: "hummingbird"),
            ]),
        .executableTarget(
            name: "cloudd",
            dependencies: [
                "CloudServer", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        // The CLI. It does not link the reference server: `jobrun demo` starts the `cloudd`
        // executable built beside it.
        .executableTarget(
            name: "jobrun",
            dependencies: [
                "Jobs", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ], swiftSettings: startupSettings),
        // Benchmarks against peers (raw SQLite, find, curl, aria2c) in one invocation.
        .executableTarget(
            name: "jobrun-bench",
            dependencies: [
                "Jobs", "CloudCore", "MediaBox", "Postbox", "PostboxPostgres", "CSQLite", "CloudServer", "ServerFixtures",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        // Child processes for crash and concurrency tests (SIGKILL mid-transaction, two writers), and
        // for the test fixtures' own exit behaviour.
        .executableTarget(name: "jobrun-testkit", dependencies: ["Postbox", "PostboxPostgres", "MediaBox", "CloudCore", "CloudProtocol", "ServerFixtures"]),

        // Real servers and hosts (PostgreSQL, network namespaces) for tests and the cluster bench; no XCTest.
        .target(name: "ServerFixtures", path: "Tests/ServerFixtures"),
        .target(name: "TestSupport", dependencies: ["ServerFixtures", "MediaBox"], path: "Tests/TestSupport"),
        .testTarget(name: "ConfinedFilesTests", dependencies: ["ConfinedFiles"]),
        .testTarget(name: "PostboxTests", dependencies: ["Postbox", "PostboxPostgres", "CSQLite", "TestSupport"]),
        .testTarget(name: "MediaBoxTests", dependencies: ["MediaBox", "TestSupport"]),
        .testTarget(name: "CloudCoreTests", dependencies: ["CloudCore", "CloudCrypto", "CloudServer", "TestSupport"]),
        .testTarget(name: "CloudServerTests", dependencies: ["CloudServer", "CloudProtocol", "CloudCrypto", "TestSupport"]),
        .testTarget(
            name: "JobsTests",
            dependencies: [
                "Jobs", "PostboxPostgres", "TestSupport", .product(name: "Yams", package: "Yams"), .product(name: "Logging", package: "swift-log"),
            ],
            exclude: ["ExampleKind/count-messages.yaml"]),
        // The CLI's own logic, in process (its behaviour as a user sees it is in IntegrationTests).
        .testTarget(name: "jobrunTests", dependencies: ["jobrun"]),
        .testTarget(name: "IntegrationTests", dependencies: ["CloudServer", "CloudCore", "Postbox", "PostboxPostgres", "MediaBox", "TestSupport"]),
    ]
)
