import Logging

/// A swift-log `LogHandler` in front of `LogSink`: libraries that log through swift-log (and
/// any code of this package that prefers `Logger`) write the same JSON lines, through the same
/// redaction, to the same rotated files as `JobLogger`. The message becomes the event's `msg`;
/// the event name is the logger's label.
public struct JobLogHandler: LogHandler {
    public let sink: LogSink
    public let label: String
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level

    public init(label: String, sink: LogSink) {
        self.label = label
        self.sink = sink
        self.logLevel = Self.level(sink.configuration.minimumLevel)
    }

    /// Routes every `Logger` of the process to `sink` (call once, at start).
    public static func bootstrap(_ sink: LogSink) {
        LoggingSystem.bootstrap { label in JobLogHandler(label: label, sink: sink) }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var fields: [String: LogValue] = ["msg": .string(event.message.description), "source": .string(event.source)]
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { _, new in new }) { fields[key] = Self.value(value) }
        if let error = event.error { fields["error"] = .string("\(error)") }
        var job: String?
        if case .string(let name)? = fields.removeValue(forKey: "job") { job = name }
        sink.write(level: Self.jobLevel(event.level), job: job, run: nil, event: label, fields: fields)
    }

    static func value(_ value: Logger.MetadataValue) -> LogValue {
        switch value {
        case .string(let text): return .string(text)
        case .stringConvertible(let convertible): return .string(convertible.description)
        case .array(let values): return .array(values.map(Self.value))
        case .dictionary(let values): return .object(values.mapValues(Self.value))
        }
    }

    static func jobLevel(_ level: Logger.Level) -> LogLevel {
        switch level {
        case .trace, .debug: return .debug
        case .info: return .info
        case .notice: return .notice
        case .warning: return .warning
        case .error, .critical: return .error
        }
    }

    static func level(_ level: LogLevel) -> Logger.Level {
        switch level {
        case .debug: return .debug
        case .info: return .info
        case .notice: return .notice
        case .warning: return .warning
        case .error: return .error
        }
    }
}
