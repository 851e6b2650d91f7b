import ArgumentParser
import Foundation
import Jobs

/// `jobrun encrypt`: a plaintext root becomes encrypted under a new random key.
struct EncryptCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "encrypt",
        abstract: "Encrypt every store of a plaintext data root under a new random key (crash-safe; rerun to finish).",
        discussion: """
            Each store is copied under the new key beside itself and renamed over the original; the \
            key is written to $JOBRUN_KEY_FILE or <root>/keys/store.key last. Killed at any point, \
            every store still opens with the old state or the new one, and running the command \
            again finishes the job. It refuses to start while another process has a store of the \
            root open (exit 75): stop the scheduler and timers first. Exit 78 for a root that is \
            already encrypted with plaintext stores left, or whose stores are on PostgreSQL.

            Example:
              jobrun encrypt --root /var/lib/jobrun
            """)

    @OptionGroup var options: GlobalOptions

    func run() throws { try KeyConversionOutput.run(.encrypt, options: options) }
}

/// `jobrun rekey`: every store of an encrypted root moves to a new random key.
struct RekeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rekey",
        abstract: "Move every store of an encrypted data root to a new random key (crash-safe; rerun to finish).",
        discussion: """
            The new key is written beside the key file (<key file>.next) first, each store is \
            rewritten under it, and the new key then replaces the old. Killed at any point, every \
            store still opens with the old key or the new one (both are on disk until the end) and \
            running the command again finishes the job. Backups taken before hold the old key's \
            stores: keep the old key with them. It refuses to start while another process has a \
            store of the root open (exit 75).

            Example:
              jobrun rekey --root /var/lib/jobrun
            """)

    @OptionGroup var options: GlobalOptions

    func run() throws { try KeyConversionOutput.run(.rekey, options: options) }
}

/// Runs a conversion and prints what it did.
enum KeyConversionOutput {
    static func run(_ operation: RootKeyConversion.Operation, options: GlobalOptions) throws {
        let root = options.dataRoot
        if !DataRoot.exists(root) { throw fail(.noInput, "no data root at \(root.path) (give --root or set \(DataRoot.environmentVariable))") }
        let report: RootKeyConversion.Report
        do { report = try RootKeyConversion.run(operation, root: root) } catch { throw fail(error) }
        if options.json {
            printJSON(
                .object([
                    "version": .int(1), "root": .string(root.path), "operation": .string(operation.rawValue),
                    "converted": .int(Int64(report.converted)), "already_converted": .int(Int64(report.alreadyConverted)),
                    "bytes": .int(report.bytes), "seconds": .double(report.seconds), "key_file": .string(report.keyFile),
                    "nothing_to_do": .bool(report.nothingToDo),
                ]))
        } else if report.nothingToDo {
            print("\(root.path) is encrypted already (\(report.keyFile)); nothing to do")
        } else {
            let rate = report.seconds > 0 ? String(format: ", %.1f MB/s", Double(report.bytes) / report.seconds / 1e6) : ""
            print(
                "\(operation == .encrypt ? "encrypted" : "rekeyed") \(root.path): \(report.converted) store(s) rewritten (\(ByteSize.human(report.bytes)) in \(String(format: "%.2f", report.seconds)) s\(rate))\(report.alreadyConverted > 0 ? ", \(report.alreadyConverted) finished before" : ""); key in \(report.keyFile)"
            )
        }
    }
}
