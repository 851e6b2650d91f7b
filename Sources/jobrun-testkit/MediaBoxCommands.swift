import Foundation

/// MediaBox child-process commands (crash tests).
let mediaBoxCommands: [String: TestkitCommand] = [:]
