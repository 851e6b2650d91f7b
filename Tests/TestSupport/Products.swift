import Foundation

/// Where `swift build` put the executables (jobrun, cloudd, jobrun-testkit) next to the tests.
public enum Products {
    /// The products directory (e.g. `.build/debug`): on Linux the test bundle's directory.
    public static var directory: URL {
        #if os(macOS)
            for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
                return bundle.bundleURL.deletingLastPathComponent()
            }
            fatalError("cannot find the products directory")
        #else
            return Bundle.main.bundleURL
        #endif
    }

    /// The path of the built executable `name`.
    public static func executable(_ name: String) -> String {
        directory.appendingPathComponent(name).path
    }

    /// The path of the built executable `name`, or an error that fails the test: `swift test`
    /// builds every product, so a missing one is a broken build, never a reason to skip.
    public static func builtExecutable(_ name: String) throws -> String {
        let path = executable(name)
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw FixtureMissing("\(name) is not built at \(path) (swift build --product \(name))")
        }
        return path
    }
}
