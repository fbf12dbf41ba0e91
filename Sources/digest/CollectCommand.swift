import ArgumentParser
import DigestCore
import DigestEvents
import DigestStore
import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

struct CollectCommand: AsyncParsableCommand, ShutsDownOnSignals {
    static let configuration = CommandConfiguration(
        commandName: "collect",
        abstract: "Take the apps' delivery and open events: POST /v1/events (docs/009-events.md).",
        discussion: """
            Apps post {"events":[{"message_id":"…","type":"received|displayed|opened|dismissed|action",\
            "action":"later","at":"RFC 3339"}]} with Authorization: Bearer <app key>; the answer is 202 with \
            {"accepted":N,"duplicates":N,"rejected":[{"index":i,"reason":"…"}]}. The key file holds one key \
            a line (# comments); SIGHUP reads it again. GET /healthz answers ok. SIGTERM stops gracefully.

            With --server-key-file, the publisher's backend reads and changes readers' preferences: GET, PUT \
            and PATCH /v1/readers/{id}/preferences and GET /v1/readers/{id}/preferences/changes, with \
            Authorization: Bearer <server key> (an app key is refused with 403).

            With --reply-key-file, a press of a digest's "fewer", "pause" or "off" button ({"type":"action",\
            "action":"pause","reply_key":"…"}) changes its reader's preferences when its reply_key is valid for \
            its message_id (the first press of a week wins); without a valid one it is rejected bad_reply_key. \
            SIGHUP reads the file again.
            """)

    @OptionGroup var database: DatabaseOptions
    @Option(help: "The address to listen on.") var host: String = "127.0.0.1"
    @Option(help: "The port (0: any free port, printed at start).") var port: Int = 8090
    @Option(help: "The apps' bearer keys, one a line (read again on SIGHUP).") var keyFile: String
    @Option(help: "The publisher's backend keys for the preferences API, one a line (read again on SIGHUP); without it the API is off.")
    var serverKeyFile: String?
    @Option(help: "The secrets that verify the buttons' reply keys, one a line, the first signing (read again on SIGHUP); without it fewer, pause and off presses are rejected.")
    var replyKeyFile: String?

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0…65535") }
    }

    func run() async throws {
        let keys: AppKeys
        do { keys = try AppKeys(path: keyFile) } catch { throw CommandError("--key-file \(error)") }
        var serverKeys: AppKeys?
        if let serverKeyFile {
            do { serverKeys = try AppKeys(path: serverKeyFile) } catch { throw CommandError("--server-key-file \(error)") }
        }
        var replyKeys: ReplyKeyFile?
        if let replyKeyFile {
            do { replyKeys = try ReplyKeyFile(path: replyKeyFile) } catch { throw CommandError("--reply-key-file \(error)") }
        }
        try await database.withStore(existing: true) { try await collect($0, keys: keys, serverKeys: serverKeys, replyKeys: replyKeys) }
    }

    private func collect<Database: DigestDatabase>(_ store: Database, keys: AppKeys, serverKeys: AppKeys?, replyKeys: ReplyKeyFile?) async throws {
        let host = self.host, port = self.port
        let logger = Logger(label: "digest.collect")
        try await store.withEventSink { sink in
            let preferences = serverKeys.map {
                PreferencesAPI(store: store, serverKeys: $0, appKeys: keys, now: EventCollector<Database.Events>.Configuration.systemNow)
            }
            let collector = EventCollector(
                sink: sink, keys: keys, configuration: .init(host: host, port: port), preferences: preferences, replyKeys: replyKeys,
                actions: store as? any ReaderActionStore, logger: logger)
            let app = collector.application { port in
                let address = "http://\(host.contains(":") ? "[\(host)]" : host):\(port)"
                var line = "collecting events on \(address)/v1/events (\(keys.count) key\(keys.count == 1 ? "" : "s"))\n"
                if let serverKeys {
                    line += "preferences API on \(address)/v1/readers/{id}/preferences (\(serverKeys.count) server key\(serverKeys.count == 1 ? "" : "s"))\n"
                }
                if let replyKeys {
                    line += "buttons applied with \(replyKeys.keys.count) reply secret\(replyKeys.keys.count == 1 ? "" : "s")\n"
                }
                FileHandle.standardOutput.write(Data(line.utf8))
            }
            let group = ServiceGroup(
                configuration: .init(
                    services: [
                        .init(service: app, successTerminationBehavior: .gracefullyShutdownGroup, failureTerminationBehavior: .gracefullyShutdownGroup),
                        .init(service: KeyReloader(keys: keys, serverKeys: serverKeys, replyKeys: replyKeys)),
                    ],
                    gracefulShutdownSignals: [.sigterm, .sigint], cancellationSignals: [], logger: logger))
            try await group.run()
        }
    }
}

/// Reads the key file again on every SIGHUP, until the group shuts down.
struct KeyReloader: Service {
    let keys: AppKeys
    /// The preferences API's keys, read again with the apps' (`nil`: none).
    var serverKeys: AppKeys?
    /// The reply key secrets, read again with the apps' keys (`nil`: none).
    var replyKeys: ReplyKeyFile?

    func run() async throws {
        for await _ in await UnixSignalsSequence(trapping: .sighup).cancelOnGracefulShutdown() {
            do {
                let count = try keys.reload()
                FileHandle.standardOutput.write(Data("keys reloaded: \(count) key\(count == 1 ? "" : "s")\n".utf8))
                if let serverKeys {
                    let count = try serverKeys.reload()
                    FileHandle.standardOutput.write(Data("server keys reloaded: \(count) key\(count == 1 ? "" : "s")\n".utf8))
                }
                if let replyKeys {
                    let count = try replyKeys.reload()
                    FileHandle.standardOutput.write(Data("reply keys reloaded: \(count) secret\(count == 1 ? "" : "s")\n".utf8))
                }
            } catch {
                FileHandle.standardError.write(Data("error: keys not reloaded, the old ones stay: \(error)\n".utf8))
            }
        }
    }
}
