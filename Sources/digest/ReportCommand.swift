import ArgumentParser
import DigestCore
import DigestReport
import DigestStore
import Foundation

struct ReportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "A week's delivery and open figures per variant, platform and locale.",
        discussion: """
            sent counts outbox messages in state sent; received, displayed, opened, dismissed and actions \
            count the events the apps posted to `digest collect` (each once per message, type and action). \
            Open rate = opened / sent, with its 95% Wilson interval; a split week (--policy split:50) also \
            compares the arms' open rates (two-sided pooled two-proportion z-test). --chart FILE.svg also \
            draws the open rates per variant and arm with their intervals. A week run with --deliver-at habit \
            and --holdout adds the delivery timing groups (habit, control, fallback: readers sent to and readers \
            who opened, each reader once), habit − control with its 95% interval (Newcombe) and z-test, and each \
            group's median minutes from due time to first open; below 100 readers a group, "not enough data". \
            The fewer, pause and off buttons' presses count per 1,000 messages sent, with 95% Wilson intervals, per \
            variant and platform (and arm and timing group where the week has them); a week with a control group \
            adds the share of readers who paused or stopped with a button within 7 days of their due time, habit \
            − control with its 95% interval (Newcombe).
            """)

    @OptionGroup var database: DatabaseOptions
    @Option(help: "The ISO week, e.g. 2026-W47.") var week: String
    @Flag(help: "Print JSON instead of a table.") var json = false
    @Option(help: ArgumentHelp("Also write the open rates per variant and arm, with their 95% intervals, as an SVG chart.", valueName: "file.svg"))
    var chart: String?

    func validate() throws {
        do { _ = try ISOWeek(parsing: week) } catch { throw ValidationError("--week: \(error)") }
    }

    func run() async throws {
        let week = try ISOWeek(parsing: self.week).description
        let (counts, timing, actions, stopped) = try await database.withStore(existing: true) { store in
            (
                try await store.eventCounts(week: week), try await store.readersByTiming(week: week),
                try await store.pressesByGroup(week: week), try await store.stoppedByTiming(week: week)
            )
        }
        let report = DeliveryReport(week: week, counts: counts, timing: timing, actions: actions, stopped: stopped)
        if let chart {
            do {
                try Data(ReportChart.svg(report).utf8).write(to: URL(fileURLWithPath: chart), options: .atomic)
            } catch {
                throw CommandError("cannot write the chart to \(chart): \(error.localizedDescription)")
            }
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(report), as: UTF8.self))
        } else {
            print(report.text)
        }
    }
}
