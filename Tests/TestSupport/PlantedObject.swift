/// What a hostile local user plants at a path of the data root's layout, in the tests that
/// check every path is refused.
public enum PlantedObject: CaseIterable, CustomStringConvertible, Sendable {
    case linkToVictim, danglingLink, fifo, hardLinkToVictim, unsafeMode

    public var description: String {
        switch self {
        case .linkToVictim: return "a link to a victim outside"
        case .danglingLink: return "a dangling link"
        case .fifo: return "a FIFO"
        case .hardLinkToVictim: return "a hard link to a victim"
        case .unsafeMode: return "mode 0777/0666"
        }
    }
}
