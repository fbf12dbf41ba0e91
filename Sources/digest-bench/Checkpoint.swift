import ArgumentParser
import DigestSQLite
import DigestStore
import Foundation

/// `digest-bench checkpoint`: times moving what a finished run left in the WAL into the database
/// file (what the next program to open it would otherwise do), so that the run can be compared with
/// the reference, whose timed part includes its checkpoints.
struct Checkpoint: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Time opening a database and checkpointing its WAL into the file (TRUNCATE).")

    @Option(help: "The SQLite file.")
    var db: String

    func run() throws {
        let walBytes = (try? FileManager.default.attributesOfItem(atPath: db + "-wal")[.size] as? Int) ?? 0
        let clock = Stopwatch()
        do {
            let connection = try SQLiteConnection(path: db)
            try connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        }
        let seconds = clock.seconds
        print("{\"walBytes\": \(walBytes), \"seconds\": \(String(format: "%.3f", seconds))}")
    }
}
