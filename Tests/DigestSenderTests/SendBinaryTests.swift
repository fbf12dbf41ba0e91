import AsyncHTTPClient
import DigestDemo
import DigestTesting
import NIOCore
import NIOHTTP1
import Foundation
import Synchronization
import Testing

/// `digest send` as a process: SIGTERM, SIGKILL and a second sender, against the fake server in this
/// test process. Loopback only.
@Suite(.serialized) struct SendBinaryTests {
    /// A running `digest send`, its output going to files in `dir`.
    final class SendProcess: @unchecked Sendable {
        // `process` is only used from the test's task.
        let process = Process()
        let log: String
        /// Pending signals, cancelled once the process was waited for.
        let watchers = Mutex<[Watcher]>([])

        /// `name` names its log.
        init(db: String, credentials: String, endpoint: String, name: String, dir: TemporaryDirectory, extra: [String]) throws {
            log = dir.path("\(name).log")
            _ = FileManager.default.createFile(atPath: log, contents: nil)
            process.executableURL = URL(fileURLWithPath: DigestBinary.path)
            process.arguments = ["send", "--db", db, "--credentials", credentials, "--endpoint", endpoint] + extra
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
            process.standardOutput = handle
            process.standardError = handle
            try DigestBinary.launch(process)
        }

        /// A test that fails half-way leaves no sender behind.
        deinit {
            for watcher in watchers.withLock({ $0 }) { watcher.cancel() }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }

        /// The lease owner it writes to the outbox: `digest send`'s default, this host and its process id.
        var owner: String { "\(ProcessInfo.processInfo.hostName):\(process.processIdentifier)" }

        func signal(_ number: Int32) { kill(process.processIdentifier, number) }

        /// Sends `number` as soon as `condition` holds, from a ``Watcher``'s thread: a fast sender
        /// could finish while this test's task waits for a thread. Cancelled once the process is waited for.
        func signal(_ number: Int32, when condition: @escaping @Sendable () -> Bool) -> Watcher {
            let pid = process.processIdentifier
            let watcher = Watcher.start(when: condition) { kill(pid, number) }
            watchers.withLock { $0.append(watcher) }
            return watcher
        }

        /// Waits for the process to end (polling, bounded); returns its exit status.
        func wait(timeout: Duration) async throws -> Int32 {
            let deadline = ContinuousClock.now + timeout
            while process.isRunning {
                if ContinuousClock.now > deadline {
                    signal(SIGKILL)
                    Issue.record("digest send did not finish in \(timeout)")
                    break
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            process.waitUntilExit()
            for watcher in watchers.withLock({ $0 }) { watcher.cancel() }
            return process.terminationStatus
        }

        var output: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }
    }

    static func until(_ timeout: Duration, _ condition: () throws -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while try !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("condition not met within \(timeout)")
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Only messages FCM had accepted but the killed sender had not yet recorded come twice: never more
    /// than it held leases on, nor more than it can have in flight (`concurrency` requests and as many
    /// answers waiting for the writer); each twice at most, with the same collapse keys. Returns how
    /// many came twice.
    static func expectDuplicatesOnlyFromTheKill(_ server: FakeFCMServer, leasedAtKill: Int, concurrency: Int) -> Int {
        let duplicates = server.deliveries.filter { $0.value.count > 1 }
        #expect(duplicates.count <= leasedAtKill)
        #expect(duplicates.count <= 2 * concurrency)
        #expect(duplicates.values.allSatisfy { $0.count == 2 && Set($0.collapseKeys).count == 1 && $0.collapseKeys[0] != nil })
        return duplicates.count
    }

    /// A new directory with a SQLite outbox of `count` messages, and a fake server (with `faults`)
    /// whose service-account file is there.
    static func setUp(count: Int, faults: FakeFCMServer.Faults) async throws -> (TemporaryDirectory, String, FakeFCMServer, String) {
        let dir = try TemporaryDirectory()
        let db = dir.path("outbox.sqlite")
        try OutboxFixture.fill(path: db, count: count)
        let server = try await FakeFCMServer.start(faults: faults)
        let credentials = dir.path("sa.json")
        try server.writeServiceAccount(to: credentials)
        return (dir, db, server, credentials)
    }

    /// The outbox rows of `tokens` (message `i` carries token `token-<i>-…`): state, attempts, last error.
    static func describe(tokens: [String], db: String) throws -> String {
        try tokens.prefix(10).map { token in
            let i = token.split(separator: "-")[1]
            let row = try OutboxFixture.scalar(
                path: db, "SELECT state || ' attempts ' || attempts || ' ' || coalesce(last_error, '') FROM digest_outbox WHERE user_id = 'u\(i)'")
            return "u\(i): \(row ?? "no row")"
        }.joined(separator: "; ")
    }

    /// No errors; every answer waits a random time in `milliseconds`.
    static func delayed(_ milliseconds: ClosedRange<Int>) -> FakeFCMServer.Faults {
        var faults = FakeFCMServer.Faults()
        faults.minDelayMilliseconds = milliseconds.lowerBound
        faults.maxDelayMilliseconds = milliseconds.upperBound
        return faults
    }

    /// The chaos a `digest send` process meets: 10% 503 with `Retry-After: 1`, 5% dropped connections,
    /// 1% UNREGISTERED. Retries wait their real time (no option of `digest send` shrinks it), from half
    /// a second doubling, so the failures are rarer than in process; and no 429: FCM's rule holds a
    /// quota error at least a minute. The sender's answer to both at the in-process rates is tested in
    /// process (FCMSenderTests, with a time scale): here what is tested is the process (signals, a
    /// kill, a second sender).
    static func chaosFaults() -> FakeFCMServer.Faults {
        var faults = FakeFCMServer.Faults()
        faults.unavailableRate = 0.10
        faults.retryAfterSeconds = 1
        faults.dropRate = 0.05
        faults.unregisteredRate = 0.01
        faults.maxDelayMilliseconds = 2
        return faults
    }

    /// Every outcome accounted for: sent or dead with a reason, nothing ready or leased.
    static func expectSettled(_ db: String, count: Int, server: FakeFCMServer) throws {
        let states = try OutboxFixture.states(path: db)
        #expect(states["sent", default: 0] + states["dead", default: 0] == count, "states: \(states)")
        #expect(states["sent"] == server.stats.delivered)
        #expect(try OutboxFixture.scalar(path: db, "SELECT count(*) FROM digest_outbox WHERE state = 'dead' AND (last_error IS NULL OR last_error = '')") == "0")
        #expect(try OutboxFixture.scalar(path: db, "SELECT count(*) FROM digest_outbox WHERE state = 'sent' AND fcm_name IS NULL") == "0")
        let unregistered = Int(try OutboxFixture.scalar(path: db, "SELECT count(*) FROM digest_outbox WHERE last_error LIKE 'UNREGISTERED:%'") ?? "") ?? -1
        #expect(unregistered > 0)
        #expect(try OutboxFixture.scalar(path: db, "SELECT count(*) FROM digest_dead_tokens") == String(unregistered))
    }

    @Test func sigtermFinishesInFlightRequestsReleasesTheRestAndExitsCleanly() async throws {
        // 16 in flight at 50 ms (16 HTTP/1.1 connections, one request each): 320 a second, so SIGTERM
        // (from a watcher at 300 delivered) lands well before the end.
        let count = 12_000
        let (dir, db, server, credentials) = try await Self.setUp(count: count, faults: Self.delayed(50...50))
        let first = try SendProcess(db: db, credentials: credentials, endpoint: server.url, name: "first", dir: dir, extra: ["--concurrency", "16", "--connections", "16"])
        let terminated = first.signal(SIGTERM) { server.stats.delivered >= 300 }
        try await Self.until(.seconds(60)) { terminated.fired || !first.process.isRunning }
        #expect(try await first.wait(timeout: .seconds(20)) == 0, "\(first.output)")
        #expect(first.output.contains("released at shutdown"))
        let states = try OutboxFixture.states(path: db)
        #expect(states["leased"] == nil)
        #expect(states["sent"] == server.stats.delivered && server.stats.delivered < count)
        #expect(try OutboxFixture.scalar(path: db, "SELECT max(attempts) FROM digest_outbox WHERE state = 'ready'") == "0")

        server.setFaults(FakeFCMServer.Faults())
        let second = try SendProcess(db: db, credentials: credentials, endpoint: server.url, name: "second", dir: dir, extra: ["--drain"])
        #expect(try await second.wait(timeout: .seconds(300)) == 0, "\(second.output)")
        #expect(try OutboxFixture.states(path: db) == ["sent": count])
        #expect(server.stats.delivered == count && server.stats.duplicates == 0)
        try await server.shutdown()
    }

    @Test func underFaultsWithoutAKillEveryMessageReachesTheServerExactlyOnce() async throws {
        let count = 3000
        let (dir, db, server, credentials) = try await Self.setUp(count: count, faults: Self.chaosFaults())
        let sender = try SendProcess(db: db, credentials: credentials, endpoint: server.url, name: "only", dir: dir,
                                     extra: ["--drain", "--concurrency", "32", "--connections", "32", "--max-attempts", "40"])
        #expect(try await sender.wait(timeout: .seconds(240)) == 0, "\(sender.output)")
        try Self.expectSettled(db, count: count, server: server)
        // The default 60 s lease: with 5 s, a sender starved of CPU on a loaded machine let leases lapse
        // and re-leased (and resent) messages it still held; see the issue's note.
        #expect(server.stats.duplicates == 0)
        let twice = server.deliveries.filter { $0.value.count > 1 }.keys.sorted()
        let twiceRows = try Self.describe(tokens: twice, db: db)
        #expect(twice.isEmpty, "delivered twice: \(twiceRows)\n\(sender.output.suffix(4000))")
        #expect(server.stats.answers["503", default: 0] > 0 && server.stats.answers["drop", default: 0] > 0)
        try await server.shutdown()
    }

    /// The issue's HTTP/1.1 case end to end: `digest send` with its defaults (1,200 at once over 12
    /// connections) against a plain-http fake FCM answering in 20 to 40 ms, with 20% 503 (Retry-After),
    /// 2% dropped connections and 1% UNREGISTERED tokens (the 429 bursts of the in-process test,
    /// FCMSenderTests', would hold the process a minute each). Every message ends sent or dead with
    /// its reason, the server saw each sent one once, and never more requests at once than the 12
    /// connections carry (one each over HTTP/1.1).
    @Test func overHTTP1TheDefaultsDeliverEveryMessageExactlyOnce() async throws {
        let count = 1_662
        var faults = FakeFCMServer.Faults.mixedFailures
        faults.quotaBurstEvery = 0
        let (dir, db, server, credentials) = try await Self.setUp(count: count, faults: faults)
        #expect(server.url.hasPrefix("http://"))
        let sender = try SendProcess(db: db, credentials: credentials, endpoint: server.url, name: "http1", dir: dir, extra: ["--drain"])
        #expect(try await sender.wait(timeout: .seconds(300)) == 0, "\(sender.output)")
        #expect(sender.output.contains("1200 at once over 12 connections"), "\(sender.output)")
        try Self.expectSettled(db, count: count, server: server)
        let stats = server.stats
        let twice = server.messageDeliveries.filter { $0.count > 1 }.map(\.token).sorted()
        let twiceRows = try Self.describe(tokens: twice, db: db)
        #expect(twice.isEmpty && stats.duplicateMessages == 0, "delivered twice: \(twice.count): \(twiceRows)\n\(sender.output.suffix(4000))")
        #expect(stats.deliveredMessages == stats.delivered)
        #expect(stats.maxInFlight <= 12, "\(stats)")
        print("over HTTP/1.1: \(stats.requests) requests, at most \(stats.maxInFlight) in flight, answers \(stats.answers.sorted { $0.key < $1.key }); \(sender.output.split(separator: "\n").filter { $0.hasPrefix("retried:") || $0.hasPrefix("time:") })")
        try await server.shutdown()
    }

    /// A sender frozen longer than its lease (SIGSTOP: a paused VM, a starved machine) comes back to
    /// leases that lapsed. Its next lease sweeps them back to `ready` and hands them to it again while
    /// it still holds them, buffered or in flight: it must send none of them a second time. The lease
    /// is the shortest `digest send` takes (45 s), the pause 50 s: longer than a request's deadline
    /// (30 s) too, so a request in flight at the pause may come back past its deadline, as if lost,
    /// and be sent again (a retry of a request that may have been delivered, as any timeout). Those
    /// only, at most the requests in flight, may come twice.
    @Test func aSenderPausedLongerThanItsLeaseSendsNothingTwice() async throws {
        let count = 3000
        let (dir, db, server, credentials) = try await Self.setUp(count: count, faults: Self.delayed(20...40))
        let sender = try SendProcess(db: db, credentials: credentials, endpoint: server.url, name: "paused", dir: dir,
                                     extra: ["--drain", "--concurrency", "16", "--connections", "16", "--lease-seconds", "45"])
        let paused = sender.signal(SIGSTOP) { server.stats.delivered >= 300 }
        try await Self.until(.seconds(120)) { paused.fired || !sender.process.isRunning }
        try await Task.sleep(for: .seconds(50))
        let leasedWhilePaused = Int(try OutboxFixture.scalar(path: db, "SELECT count(*) FROM digest_outbox WHERE state = 'leased'") ?? "") ?? 0
        sender.signal(SIGCONT)
        #expect(try await sender.wait(timeout: .seconds(240)) == 0, "\(sender.output)")
        #expect(leasedWhilePaused > 16, "the pause should leave leases, buffered and in flight, to lapse")
        #expect(try OutboxFixture.states(path: db) == ["sent": count])
        let twice = server.deliveries.filter { $0.value.count > 1 }.keys.sorted()
        let twiceRows = try Self.describe(tokens: twice, db: db)
        let users = twice.map { "'u\($0.split(separator: "-")[1])'" }.joined(separator: ",")
        let pastDeadline = twice.isEmpty ? "0" : try OutboxFixture.scalar(
            path: db, "SELECT count(*) FROM digest_outbox WHERE user_id IN (\(users)) AND last_error LIKE 'NETWORK:%deadlineExceeded%'")
        #expect(server.stats.delivered == count && twice.count <= 16 && pastDeadline == String(twice.count),
                "delivered twice: \(twiceRows)\n\(sender.output.suffix(4000))")
        try await server.shutdown()
    }

    /// The issue's chaos test: 20,000 messages under ``chaosFaults()``; the first sender is killed with
    /// SIGKILL mid-way, a second finishes once the first one's leases (45 s) have lapsed.
    @Test func chaosWithASigkilledSenderLosesNothingAndDuplicatesOnlyWhatWasInFlight() async throws {
        let count = 20_000
        let concurrency = 32
        let (dir, db, server, credentials) = try await Self.setUp(count: count, faults: Self.chaosFaults())
        let options = ["--drain", "--concurrency", String(concurrency), "--connections", String(concurrency), "--lease-seconds", "45", "--max-attempts", "40"]

        let first = try SendProcess(db: db, credentials: credentials, endpoint: server.url, name: "first", dir: dir, extra: options)
        let killed = first.signal(SIGKILL) { server.stats.delivered >= count / 3 }
        try await Self.until(.seconds(240)) { killed.fired || !first.process.isRunning }
        #expect(killed.fired, "the first sender ended before the kill: \(first.output)")
        _ = try await first.wait(timeout: .seconds(10))
        let serverInFlightAtKill = server.inFlight
        let leasedAtKill = Int(try OutboxFixture.scalar(path: db, "SELECT count(*) FROM digest_outbox WHERE lease_owner = '\(first.owner)'") ?? "0") ?? 0
        let deliveredAtKill = server.stats.delivered

        let second = try SendProcess(db: db, credentials: credentials, endpoint: server.url, name: "second", dir: dir, extra: options)
        #expect(try await second.wait(timeout: .seconds(600)) == 0, "\(second.output)")

        try Self.expectSettled(db, count: count, server: server)
        let duplicates = Self.expectDuplicatesOnlyFromTheKill(server, leasedAtKill: leasedAtKill, concurrency: concurrency)
        print("chaos: delivered \(server.stats.delivered) (\(deliveredAtKill) before the kill), duplicates \(duplicates), leased at kill \(leasedAtKill), server in flight at kill \(serverInFlightAtKill), answers \(server.stats.answers.sorted { $0.key < $1.key })")
        try await server.shutdown()
    }

    /// The issue's "at FCM's latency" test: `digest send` with its defaults (1,200 in flight over 12
    /// HTTP/2 connections, paced to 600,000 a minute) against a fake FCM answering in 80 ms (±10%) with
    /// 100 streams a connection, over TLS; half-way every connection gets a GOAWAY. Every one of the
    /// 30,000 messages is delivered exactly once, under its collapse key: the requests a GOAWAY left
    /// out are sent again on a new connection, the ones it kept are answered on the old one.
    @Test func atFCMsLatencyTheDefaultsDeliverEveryMessageOnceAcrossAGoAway() async throws {
        let count = 30_000
        let dir = try TemporaryDirectory()
        guard let tls = try TestCertificate.make(in: dir.url) else {
            print("skipped: no openssl program to make a test certificate")
            return
        }
        let db = dir.path("outbox.sqlite")
        try OutboxFixture.fill(path: db, count: count)
        let server = try await FakeFCMServer.start(faults: Self.delayed(72...88), tls: tls, maxConcurrentStreams: 100)
        let credentials = dir.path("sa.json")
        try server.writeServiceAccount(to: credentials)
        let goneAway = Watcher.start(when: { server.stats.delivered >= count / 2 }) { server.goAway() }
        defer { goneAway.cancel() }
        let sender = try SendProcess(db: db, credentials: credentials, endpoint: server.url, name: "latency", dir: dir,
                                     extra: ["--drain", "--ca-file", tls.certificatePath])
        #expect(try await sender.wait(timeout: .seconds(900)) == 0, "\(sender.output)")
        #expect(sender.output.contains("1200 at once over 12 connections, at most 600000/min"), "\(sender.output)")
        #expect(sender.output.contains("sent: \(count)\n"), "\(sender.output)")
        #expect(goneAway.fired)

        let stats = server.stats
        #expect(stats.goAways >= 12, "every connection open at the time: \(stats)")
        #expect(stats.http2Connections > stats.goAways, "new connections after the GOAWAY: \(stats)")
        #expect(stats.http2Requests == stats.requests)
        #expect(stats.maxInFlight <= 1_200)
        // Per dedupe key (a message's token) on the server's side: once each, with its collapse key.
        let deliveries = server.deliveries
        #expect(deliveries.count == count && stats.delivered == count && stats.duplicates == 0, "\(stats)")
        #expect(deliveries.values.allSatisfy { $0.count == 1 && $0.collapseKeys == ["digest-2026-W46"] })
        #expect(try OutboxFixture.states(path: db) == ["sent": count])
        print("at latency: \(stats.requests) requests, \(stats.http2Connections) connections (\(stats.maxHTTP2Connections) at once), \(stats.goAways) GOAWAYs, at most \(stats.maxInFlight) in flight; \(sender.output.split(separator: "\n").filter { $0.hasPrefix("time:") || $0.hasPrefix("retried:") })")
        try await server.shutdown()
    }

    @Test func metricsAndHealthAreServedOnTheMetricsPort() async throws {
        let dir = try TemporaryDirectory()
        let db = dir.path("outbox.sqlite")
        try OutboxFixture.fill(path: db, count: 200)
        var faults = FakeFCMServer.Faults()
        faults.unregisteredRate = 0.05
        let server = try await FakeFCMServer.start(faults: faults)
        let credentials = dir.path("sa.json")
        try server.writeServiceAccount(to: credentials)
        let sender = try SendProcess(db: db, credentials: credentials, endpoint: server.url, name: "metrics", dir: dir, extra: ["--metrics-port", "0"])
        var metricsURL: URL?
        try await Self.until(.seconds(60)) {
            metricsURL = sender.output.split(separator: "\n").first { $0.hasPrefix("metrics: ") }.flatMap { URL(string: String($0.dropFirst(9))) }
            return metricsURL != nil && server.stats.requests >= 200
        }
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        var text = ""
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            let response = try await client.execute(HTTPClientRequest(url: metricsURL!.absoluteString), timeout: .seconds(5))
            text = String(buffer: try await response.body.collect(upTo: 1 << 20))
            if text.contains("digest_sender_sent_total{provider=\"fcm\"}") && text.contains("digest_sender_dead_total{provider=\"fcm\",reason=\"UNREGISTERED\"}") { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        // The same port: /healthz while sending, 404 elsewhere.
        let base = metricsURL!.absoluteString.dropLast("/metrics".count)
        let health = try await client.execute(HTTPClientRequest(url: "\(base)/healthz"), timeout: .seconds(5))
        let healthText = String(buffer: try await health.body.collect(upTo: 1 << 16))
        #expect(health.status.code == 200 && healthText.hasPrefix("ok\nsender: sending\ncredentials: token valid for "), "\(healthText)")
        #expect(healthText.hasSuffix("(the service account digest-sender@digest-test.iam.gserviceaccount.com)\n"), "\(healthText)")
        #expect(sender.output.contains("health: \(base)/healthz"))
        let elsewhere = try await client.execute(HTTPClientRequest(url: "\(base)/"), timeout: .seconds(5))
        #expect(elsewhere.status.code == 404)
        try await client.shutdown()
        #expect(text.contains("digest_sender_sent_total{provider=\"fcm\"}"), "\(text)")
        #expect(text.contains("digest_sender_dead_total{provider=\"fcm\",reason=\"UNREGISTERED\"}"))
        #expect(text.contains("digest_sender_request_duration_seconds"))
        sender.signal(SIGTERM)
        #expect(try await sender.wait(timeout: .seconds(20)) == 0, "\(sender.output)")
        try await server.shutdown()
    }

    @Test func aMetricsPortInUseIsAConfigurationError() async throws {
        let (dir, db, server, credentials) = try await Self.setUp(count: 10, faults: .init())
        let taken = try await FakeMetadataServer.start()  // anything listening on loopback
        let port = String(taken.host.split(separator: ":").last!)
        let output = try await DigestBinary.run(["send", "--db", db, "--credentials", credentials, "--endpoint", server.url, "--drain", "--metrics-port", port])
        #expect(output.status == 78 && output.stderr.contains("127.0.0.1:\(port): cannot serve /metrics and /healthz"), "\(output.stderr)")
        withExtendedLifetime(dir) {}
        try await taken.shutdown()
        try await server.shutdown()
    }

    @Test func badCredentialsStopWithAClearMessageAndNothingLeased() async throws {
        let dir = try TemporaryDirectory()
        let db = dir.path("outbox.sqlite")
        try OutboxFixture.fill(path: db, count: 10)
        let missing = try await DigestBinary.run(["send", "--db", db, "--credentials", dir.path("nope.json")])
        #expect(missing.status == 78 && missing.stderr.contains("cannot read the service-account file"), "\(missing.status)")
        // No key at all (no option, no DIGEST_CREDENTIALS or GOOGLE_APPLICATION_CREDENTIALS): 78 at once.
        let none = try await DigestBinary.run(["send", "--db", db], environment: ["DIGEST_CREDENTIALS": nil, "GOOGLE_APPLICATION_CREDENTIALS": nil])
        #expect(none.status == 78 && none.stderr.contains("no credentials: pass --credentials FILE"), "\(none.status) \(none.stderr)")
        // The key from the environment, the store from DIGEST_DB.
        let fromEnvironment = try await DigestBinary.run(
            ["send", "--validate-only"], environment: ["DIGEST_DB": db, "GOOGLE_APPLICATION_CREDENTIALS": dir.path("user.json")])
        #expect(fromEnvironment.status == 78 && fromEnvironment.stderr.contains("user.json"), "\(fromEnvironment.stderr)")
        try #"{"type":"authorized_user"}"#.write(toFile: dir.path("user.json"), atomically: true, encoding: .utf8)
        let wrongKind = try await DigestBinary.run(["send", "--db", db, "--credentials", dir.path("user.json")])
        #expect(wrongKind.status != 0 && wrongKind.stderr.contains("service-account"))
        #expect(try OutboxFixture.states(path: db) == ["ready": 10])
    }

    @Test func requeueDeadMakesDeadMessagesReadyByReason() async throws {
        let dir = try TemporaryDirectory()
        let db = dir.path("outbox.sqlite")
        try OutboxFixture.fill(path: db, count: 30) { $0 <= 3 }
        let server = try await FakeFCMServer.start()
        let credentials = dir.path("sa.json")
        try server.writeServiceAccount(to: credentials)
        let sender = try SendProcess(db: db, credentials: credentials, endpoint: server.url, name: "once", dir: dir, extra: ["--drain"])
        #expect(try await sender.wait(timeout: .seconds(60)) == 0)
        #expect(try OutboxFixture.states(path: db) == ["sent": 27, "dead": 3])
        let none = try await DigestBinary.run(["queue", "requeue-dead", "--db", db, "--reason", "UNAVAILABLE"])
        #expect(none.status == 0 && none.stdout.contains("requeued 0 dead messages"))
        let some = try await DigestBinary.run(["queue", "requeue-dead", "--db", db, "--reason", "INVALID_ARGUMENT", "--week", "2026-W46"])
        #expect(some.status == 0 && some.stdout.contains("requeued 3 dead messages"), "\(some.stderr)")
        #expect(try OutboxFixture.states(path: db) == ["sent": 27, "ready": 3])
        try await server.shutdown()
    }

    /// The demo's run, FCM, APNs and Web Push devices alike, delivered by one `digest send` holding
    /// every provider's credentials: every message reaches its own fake, which checks it against that
    /// provider's rules (the push service decrypts each Web Push message with the demo subscriber's
    /// key). First with FCM credentials only: the APNs and Web Push messages are left as they are,
    /// counted, and do not keep `--drain` running.
    @Test func theWeeklyRunsMessagesPassEachProvidersRulesEndToEnd() async throws {
        let dir = try TemporaryDirectory()
        guard let tls = try TestCertificate.make(in: dir.url) else {
            print("skipped: no openssl program to make a test certificate")
            return
        }
        // The push service first: the demo's subscriptions point at it; it remakes their keys from the path.
        let push = try await FakeWebPushServer.start(tls: tls)
        push.lookUpOthers { id in { let secrets = DemoWebPush.secrets(subscriber: id); return (secrets.privateKey, secrets.auth) } }
        let demo = try await DigestBinary.run([
            "demo", "--out", dir.path("demo"), "--users", "120", "--send-at", "now", "--webpush-devices", "100", "--webpush-base", "\(push.origin)/push",
        ])
        #expect(demo.status == 0, "\(demo.stderr)")
        let db = dir.path("demo/digest.sqlite")
        let count = try OutboxFixture.states(path: db)["ready", default: 0]
        let stats = try await DigestBinary.run(["queue", "stats", "--db", db, "--json"])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(stats.stdout.utf8)) as? [String: Any], "\(stats.stdout)")
        let byProvider = try #require(json["byProvider"] as? [String: Int], "\(stats.stdout)")
        let apnsCount = byProvider["apns", default: 0], webCount = byProvider["webpush", default: 0]
        #expect(count > 100 && apnsCount > 5 && webCount > 3 && apnsCount + webCount < count, "\(byProvider)")
        let server = try await FakeFCMServer.start()
        let credentials = dir.path("sa.json")
        try server.writeServiceAccount(to: credentials)
        let fcmOnly = try SendProcess(db: db, credentials: credentials, endpoint: server.url, name: "fcm", dir: dir, extra: ["--drain"])
        #expect(try await fcmOnly.wait(timeout: .seconds(60)) == 0, "\(fcmOnly.output)")
        #expect(fcmOnly.output.contains("apns: \(apnsCount) messages (\(apnsCount) due) left as they are: no --apns-key-file"), "\(fcmOnly.output)")
        #expect(fcmOnly.output.contains("webpush: \(webCount) messages (\(webCount) due) left as they are: no --vapid-key-file"), "\(fcmOnly.output)")
        #expect(server.stats.answers == ["200": count - apnsCount - webCount], "\(fcmOnly.output)")
        #expect(try OutboxFixture.states(path: db) == ["sent": count - apnsCount - webCount, "ready": apnsCount + webCount])

        let apns = try await FakeAPNsServer.start(tls: tls)
        try apns.writeKey(to: dir.path("AuthKey.p8"))
        let keygen = try await DigestBinary.run(["webpush", "keygen", "--out", dir.path("vapid.pem")])
        #expect(keygen.status == 0, "\(keygen.stderr)")
        let all = try SendProcess(
            db: db, credentials: credentials, endpoint: server.url, name: "all", dir: dir,
            extra: [
                "--drain", "--apns-key-file", dir.path("AuthKey.p8"), "--apns-key-id", apns.keyID, "--apns-team-id", apns.teamID,
                "--apns-topic", "com.example.digest", "--apns-endpoint", apns.url, "--ca-file", tls.certificatePath,
                "--vapid-key-file", dir.path("vapid.pem"), "--vapid-subject", "mailto:push@example.com", "--allow-push-hosts", "127.0.0.1",
            ])
        #expect(try await all.wait(timeout: .seconds(60)) == 0, "\(all.output)")
        #expect(all.output.contains("FCM:\n  sent: 0") && all.output.contains("APNs:\n  sent: \(apnsCount)"), "\(all.output)")
        #expect(all.output.contains("Web Push:\n  sent: \(webCount)"), "\(all.output)")
        #expect(apns.stats.answers == ["200": apnsCount] && apns.stats.delivered == apnsCount, "\(all.output)")
        let pushStats = push.stats
        #expect(pushStats.answers == ["201": webCount] && pushStats.decrypted == webCount && pushStats.duplicateMessages == 0, "\(pushStats)")
        #expect(pushStats.vapidTokens == 1 && pushStats.http2Requests == webCount)
        #expect(server.stats.answers == ["200": count - apnsCount - webCount])
        #expect(try OutboxFixture.states(path: db) == ["sent": count])
        // Every platform's collapse key arrived; every decrypted plaintext names its message and link.
        #expect(server.deliveries.values.allSatisfy { $0.collapseKeys.allSatisfy { $0?.hasPrefix("digest-") == true } })
        try await apns.shutdown()
        try await push.shutdown()
        try await server.shutdown()
    }

    /// `digest send-test`: the reader's digest reaches the named test device only (FCM and Web Push),
    /// marked as a test with a fresh message id; the outbox is left as it was; the eleventh test send
    /// to a device within a minute is refused.
    @Test func aTestSendReachesOnlyTheNamedDeviceAndLeavesTheOutboxAlone() async throws {
        let dir = try TemporaryDirectory()
        guard let tls = try TestCertificate.make(in: dir.url) else {
            print("skipped: no openssl program to make a test certificate")
            return
        }
        let demo = try await DigestBinary.run(["demo", "--out", dir.path("demo"), "--users", "60", "--send-at", "now"])
        #expect(demo.status == 0, "\(demo.stderr)")
        let db = dir.path("demo/digest.sqlite")
        let before = try OutboxFixture.states(path: db)
        let user = try #require(try OutboxFixture.scalar(path: db, "SELECT user_id FROM digest_outbox WHERE platform = 'android' ORDER BY id LIMIT 1"))
        let fcm = try await FakeFCMServer.start()
        try fcm.writeServiceAccount(to: dir.path("sa.json"))
        let push = try await FakeWebPushServer.start(tls: tls)
        let browser = push.subscribe(id: "ana-browser")
        try Data("""
            [{"name": "Ana's Pixel", "provider": "fcm", "platform": "android", "token": "ana-pixel-token"},
             {"name": "Ana's browser", "provider": "webpush", "subscription": \(browser.json)}]
            """.utf8).write(to: dir.url.appendingPathComponent("devices.json"))
        let common = ["send-test", "--db", db, "--user", user, "--test-devices", dir.path("devices.json")]
        let pixel = try await DigestBinary.run(common + ["--to-device", "Ana's Pixel", "--credentials", dir.path("sa.json"), "--endpoint", fcm.url])
        #expect(pixel.status == 0 && pixel.stdout.contains("sent to Ana's Pixel (fcm, android): \(user)'s digest, the outbox's"), "\(pixel.stdout)\(pixel.stderr)")
        #expect(Array(fcm.deliveries.keys) == ["ana-pixel-token"] && fcm.stats.answers == ["200": 1], "\(fcm.stats)")
        #expect(try OutboxFixture.states(path: db) == before)
        let testID = try #require(pixel.stdout.split(separator: "\n").first { $0.hasPrefix("message_id: ") }?.dropFirst(12).prefix(32))
        #expect(try OutboxFixture.scalar(path: db, "SELECT device || '|' || user_id FROM digest_test_sends WHERE message_id = '\(testID)'") == "Ana's Pixel|\(user)")
        #expect(try OutboxFixture.scalar(path: db, "SELECT count(*) FROM digest_outbox WHERE message_id = '\(testID)'") == "0")

        let keygen = try await DigestBinary.run(["webpush", "keygen", "--out", dir.path("vapid.pem")])
        #expect(keygen.status == 0, "\(keygen.stderr)")
        let web = try await DigestBinary.run(common + [
            "--to-device", "Ana's browser", "--vapid-key-file", dir.path("vapid.pem"), "--vapid-subject", "mailto:editor@example.com",
            "--allow-push-hosts", "127.0.0.1", "--ca-file", tls.certificatePath,
        ])
        #expect(web.status == 0 && web.stdout.contains("sent to Ana's browser (webpush, web)"), "\(web.stdout)\(web.stderr)")
        let plaintext = try #require(push.deliveries("ana-browser")?.plaintext)
        let fields = try #require(try JSONSerialization.jsonObject(with: Data(plaintext)) as? [String: Any])
        #expect(fields["test"] as? String == "1" && (fields["message_id"] as? String)?.count == 32 && fields["title"] is String, "\(fields)")
        #expect(push.stats.requests == 1 && fcm.stats.requests == 1)
        #expect(try OutboxFixture.states(path: db) == before)

        // Ten a minute per device: nine more to the phone go, the eleventh is refused.
        for _ in 1...9 {
            let again = try await DigestBinary.run(common + ["--to-device", "Ana's Pixel", "--credentials", dir.path("sa.json"), "--endpoint", fcm.url])
            #expect(again.status == 0, "\(again.stderr)")
        }
        let refused = try await DigestBinary.run(common + ["--to-device", "Ana's Pixel", "--credentials", dir.path("sa.json"), "--endpoint", fcm.url])
        #expect(refused.status != 0 && refused.stderr.contains("had 10 test sends in the last minute"), "\(refused.stderr)")
        #expect(fcm.stats.requests == 10)
        let unknown = try await DigestBinary.run(common + ["--to-device", "Bo's phone", "--credentials", dir.path("sa.json"), "--endpoint", fcm.url])
        #expect(unknown.status != 0 && unknown.stderr.contains("no test device named Bo's phone (there are: Ana's Pixel, Ana's browser)"), "\(unknown.stderr)")
        try await fcm.shutdown()
        try await push.shutdown()
    }
}
