/// Every file jobrun reads and its sections, declared once: `docs/configuration.md` is printed
/// from this list (a test fails when they differ), and a test checks that every section type in
/// the sources is in it.
public enum ConfigurationReference {
    /// One file jobrun reads.
    public struct File: Sendable {
        public var title: String
        /// Where the file is, as the docs write it.
        public var location: String
        public var doc: String
        /// Its sections, the top level first.
        public var sections: [any ConfigSection.Type]
    }

    /// Markers around the generated part of `docs/configuration.md`.
    public static let beginMarker = "<!-- configuration: generated from the sections' parameters; do not edit by hand -->"
    public static let endMarker = "<!-- end of generated configuration -->"

    public static let files: [File] = [
        File(
            title: "Job file", location: "`<jobs-dir>/<name>.yaml`",
            doc: "One job: what runs, when, and how it is retried. Each kind's `params:` are in docs/job-files.md.",
            sections: [JobFileSection.self, RetrySection.self, BackoffSection.self]),
        File(
            title: "Account cloud configuration", location: "`<root>/account-<id>/config.yaml`",
            doc: "Where the account's datacenters are, its credentials, timeouts and retries; see docs/account-config.md.",
            sections: [AccountConfigSection.self, AccountRetrySection.self]),
        File(
            title: "Cluster configuration", location: "`<root>/cluster.yaml` (mode 0600)",
            doc: "What the hosts of a fleet share; see docs/scale-out.md and docs/object-storage.md. A variable, when set, wins over the file.",
            sections: [
                ClusterFileSection.self, PostgresSection.self, PostgresTLSSection.self, ObjectStorageSection.self, SharedMediaSection.self,
            ]),
        File(
            title: "Failure streak", location: "`<root>/alerts/<job>`",
            doc: "Written by jobrun when a run fails, removed when one succeeds (one JSON line).",
            sections: [AlertStateSection.self]),
        File(
            title: "Pause note", location: "`<root>/suspended/<job>`",
            doc: "Written by `jobrun pause`, removed by `jobrun resume`; its presence is the pause (one JSON line).",
            sections: [PauseNoteSection.self]),
    ]

    /// Replaces the generated part of `docs/configuration.md`'s text; nil without the markers.
    public static func replacingGenerated(in document: String) -> String? {
        KindReference.replacingGenerated(in: document, with: markdown(), beginMarker: beginMarker, endMarker: endMarker)
    }

    /// Every section of every file.
    public static var sections: [any ConfigSection.Type] { files.flatMap(\.sections) }

    /// A `##` part per file and a table per section.
    public static func markdown() -> String {
        var out = ""
        for file in files {
            out += "## \(file.title)\n\n\(file.location). \(file.doc)\n\n"
            for section in file.sections {
                out += "### " + (section.path.isEmpty ? "Top level" : "`\(section.path)`") + "\n\n"
                out += "| key | type | default | range | environment | meaning |\n|---|---|---|---|---|---|\n"
                for spec in section.parameters.map(\.spec) {
                    let type: String
                    if case .section(let nested) = spec.type { type = "section `\(nested.name)`" } else { type = KindReference.typeText(spec.type) }
                    let defaultText = if case .section = spec.type { "—" } else { KindReference.defaultText(spec) }
                    let environment = spec.environment.map { "`\($0)`" } ?? ""
                    var meaning = spec.doc
                    if let former = spec.formerName { meaning += "; formerly `\(former)` (still read, deprecated)" }
                    if spec.acceptsBareSeconds { meaning += "; a bare number of seconds is still read (deprecated)" }
                    out += "| `\(spec.name)` | \(type) | \(defaultText) | \(KindReference.rangeText(spec)) | \(environment) | \(meaning) |\n"
                }
                out += "\n"
            }
        }
        return out
    }
}
