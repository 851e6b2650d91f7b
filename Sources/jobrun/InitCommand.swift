import ArgumentParser
import Foundation
import Jobs

/// `jobrun init [--encrypt]`: creates a data root, and with `--encrypt` its random key.
struct InitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create a data root; with --encrypt, a random key that every store of the root is encrypted with.",
        discussion: """
            The key is written once, 0600, to $JOBRUN_KEY_FILE when that names a file, else to \
            <root>/keys/store.key; running init again changes nothing. A root that already holds \
            plaintext stores is refused (exit 78): `jobrun encrypt` converts it. Keep a copy of the \
            key apart from the root's backups: without it the stores cannot be read. \
            docs/operations.md, "Encryption at rest", says where keys come from and which wins.

            Examples:
              jobrun init --encrypt --root /var/lib/jobrun
              JOBRUN_KEY_FILE=/etc/jobrun/store.key jobrun init --encrypt --root /var/lib/jobrun
            """)

    @OptionGroup var options: GlobalOptions
    @Flag(help: "Create the root's key (AES-256, random) unless it has one.") var encrypt = false

    func run() throws {
        let root = options.dataRoot
        let outcome: RootInitialization.KeyOutcome
        do { outcome = try RootInitialization.run(root: root, encrypt: encrypt) } catch { throw fail(error) }
        let (text, keyFile): (String, String?) =
            switch outcome {
            case .none: ("data root \(root.path) ready (not encrypted)", nil)
            case .created(let path): ("data root \(root.path) ready, encrypted at rest: new key in \(path) — keep a copy apart from the root's backups", path)
            case .existing(let source): ("data root \(root.path) ready, encrypted at rest (\(source)); no new key written", source.path)
            }
        if options.json {
            var object: [String: LogValue] = ["version": .int(1), "root": .string(root.path), "encrypted": .bool(keyFile != nil)]
            if let keyFile { object["key_file"] = .string(keyFile) }
            if case .created = outcome { object["key_created"] = .bool(true) }
            printJSON(.object(object))
        } else {
            print(text)
        }
    }
}
