/// A test fixture did not find what its seeded, deterministic dataset must contain: a failure
/// (the dataset or the code that reads it changed), never a reason to skip.
public struct FixtureMissing: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
