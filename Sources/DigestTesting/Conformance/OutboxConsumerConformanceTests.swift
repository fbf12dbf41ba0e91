import DigestCore
import DigestDemo
import DigestStore
import Foundation
import Testing

/// Every consumer operation on SQLite and on PostgreSQL, and both against the pure lifecycle: the
/// same events give the same rows.
@Suite struct OutboxConsumerConformanceTests {
    @Test(arguments: Backend.allCases) func leaseTakesDueMessagesOldestFirstAndNeverTwice(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        try await store.outbox(count: 6) { i in Int64(100 - i) }  // u6 is the oldest
        try await store.withConsumer { consumer in
            let first = try await consumer.lease(owner: "a", limit: 2, now: 95, leaseSeconds: 60, maxAttempts: 5, providers: [.fcm])
            #expect(first.map(\.userID).sorted() == ["u5", "u6"])
            #expect(first.allSatisfy { $0.attempts == 1 && $0.message.contains("tok-") })
            let second = try await consumer.lease(owner: "b", limit: 10, now: 95, leaseSeconds: 60, maxAttempts: 5, providers: [.fcm])
            #expect(second.isEmpty)  // u1…u4 are not due before 96…99
            let third = try await consumer.lease(owner: "b", limit: 10, now: 99, leaseSeconds: 60, maxAttempts: 5, providers: [.fcm])
            #expect(third.map(\.userID).sorted() == ["u1", "u2", "u3", "u4"])
            #expect(try await consumer.backlog(now: 99) == OutboxBacklog(due: 0, retrying: 0, leased: 6))
        }
    }

    /// The delivery window, the same on both stores: nothing before its due time; a message whose
    /// window ended unsent waits through the quiet hours (due when they end, its window a day on);
    /// one past its TTL is expired with its reason and never leased; a message without a window
    /// (`--send-at now`) goes whenever it is due.
    @Test(arguments: Backend.allCases) func windowsHoldThroughQuietHoursAndExpireWhatOutlivedItsTTL(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        let due = Timestamp.parse("2026-11-16T08:00:00Z")!
        let hour: Int64 = 3600
        try await store.outbox(count: 3, availableAt: { _ in due }) { i in
            switch i {
            case 1: (due + 12 * hour, due + 23 * hour, due + 48 * hour)
            case 2: (due + 12 * hour, due + 23 * hour, due + hour)
            default: nil
            }
        }
        try await store.withConsumer { consumer in
            #expect(try await consumer.lease(owner: "a", limit: 10, now: due - hour, leaseSeconds: 60, maxAttempts: 5, providers: [.fcm]).isEmpty)
            #expect(try await consumer.backlog(now: due - hour) == OutboxBacklog(waiting: 3, nextDue: due))
            // The sender comes back in the reader's night: u3 goes, u1 waits for the morning, u2 expired.
            let night = try await consumer.lease(owner: "a", limit: 10, now: due + 14 * hour, leaseSeconds: 60, maxAttempts: 5, providers: [.fcm])
            #expect(night.map(\.userID) == ["u3"])
            #expect(try await consumer.settle(night.map { .sent(id: $0.id, name: "n") }, owner: "a", now: due + 14 * hour, maxAttempts: 5) == 1)
            let rows = try store.rows()
            let byUser = Dictionary(uniqueKeysWithValues: rows.values.compactMap { row in
                row.state == .sent ? ("u3", row) : row.state == .expired ? ("u2", row) : ("u1", row)
            })
            #expect(byUser["u2"]?.lastError == "EXPIRED: not sent before its TTL ended at 2026-11-16T09:00:00Z")
            #expect(byUser["u1"]?.state == .ready && byUser["u1"]?.availableAt == due + 23 * hour)
            #expect(try store.sql("SELECT count(*) FROM digest_outbox WHERE user_id = 'u1' AND window_end = \(backend == .sqlite ? "\(due + 36 * hour)" : "to_timestamp(\(due + 36 * hour))")") == "1")
            #expect(try await consumer.lease(owner: "a", limit: 10, now: due + 22 * hour, leaseSeconds: 60, maxAttempts: 5, providers: [.fcm]).isEmpty)
            let morning = try await consumer.lease(owner: "a", limit: 10, now: due + 23 * hour, leaseSeconds: 60, maxAttempts: 5, providers: [.fcm])
            #expect(morning.map(\.userID) == ["u1"])
        }
    }

    @Test(arguments: Backend.allCases) func settleAppliesOnlyToTheHolderAndUnregisteredRemovesTheDevice(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        try await store.outbox(count: 5)
        try await store.withConsumer { consumer in
            let leased = try await consumer.lease(owner: "a", limit: 5, now: 10, leaseSeconds: 60, maxAttempts: 5, providers: [.fcm])
            #expect(leased.count == 5)
            let ids = leased.map(\.id)
            #expect(try await consumer.settle([.sent(id: ids[0], name: "x")], owner: "b", now: 11, maxAttempts: 5) == 0)
            let applied = try await consumer.settle(
                [
                    .sent(id: ids[0], name: "projects/p/messages/1"),
                    .retry(id: ids[1], at: 70, error: "UNAVAILABLE: 503"),
                    .dead(id: ids[2], reason: "INVALID_ARGUMENT: bad"),
                    .unregistered(id: ids[3], reason: "UNREGISTERED: gone"),
                    .release(id: ids[4]),
                ], owner: "a", now: 11, maxAttempts: 5)
            #expect(applied == 5)
            let rows = try store.rows()
            #expect(rows[ids[0]]?.state == .sent && rows[ids[0]]?.fcmName == "projects/p/messages/1" && rows[ids[0]]?.sentAt == 11)
            #expect(rows[ids[1]]?.state == .ready && rows[ids[1]]?.availableAt == 70 && rows[ids[1]]?.attempts == 1)
            #expect(rows[ids[2]]?.state == .dead && rows[ids[2]]?.lastError == "INVALID_ARGUMENT: bad")
            #expect(rows[ids[3]]?.state == .dead)
            #expect(rows[ids[4]]?.state == .ready && rows[ids[4]]?.attempts == 0)
            // The next run's reader no longer sees the unregistered token.
            let tokens = try await store.withReader { reader in
                var tokens: [String] = []
                for i in 1...5 { tokens += try await reader.user(id: "u\(i)")?.reader.devices.map(\.token) ?? [] }
                return tokens
            }
            #expect(tokens == ["tok-1", "tok-2", "tok-3", "tok-5"])
            #expect(try await consumer.backlog(now: 11) == OutboxBacklog(due: 1, retrying: 1, leased: 0, waiting: 0, nextDue: 70))
            #expect(try await consumer.requeueDead(reasonPrefix: "UNREGISTERED", week: nil, now: 20) == 1)
            #expect(try await consumer.requeueDead(reasonPrefix: nil, week: "2026-W45", now: 20) == 0)
            #expect(try await consumer.requeueDead(reasonPrefix: nil, week: "2026-W46", now: 20) == 1)
            #expect(try store.rows().values.filter { $0.state == .dead }.isEmpty)
        }
    }

    /// A postponed release (a message the sender may not send for now) is untried, not due before its
    /// time, carries its reason, and is left alone by the holder's other leases; a plain release in the
    /// same settlement keeps its time and last error.
    @Test(arguments: Backend.allCases) func aPostponedReleaseIsUntriedAndDueLater(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        try await store.outbox(count: 3)
        try await store.withConsumer { consumer in
            let leased = try await consumer.lease(owner: "a", limit: 3, now: 10, leaseSeconds: 60, maxAttempts: 5, providers: [.fcm])
            let ids = leased.map(\.id)
            #expect(try await consumer.settle([.retry(id: ids[2], at: 11, error: "UNAVAILABLE: 503")], owner: "a", now: 10, maxAttempts: 5) == 1)
            let again = try await consumer.lease(owner: "a", limit: 3, now: 12, leaseSeconds: 60, maxAttempts: 5, providers: [.fcm])
            #expect(again.map(\.id) == [ids[2]] && again.first?.attempts == 2)
            #expect(try await consumer.settle([.release(id: ids[0], until: 910, reason: "HOST_NOT_ALLOWED: push.example.net")], owner: "b", now: 12, maxAttempts: 5) == 0)
            let applied = try await consumer.settle(
                [
                    .release(id: ids[0], until: 910, reason: "HOST_NOT_ALLOWED: push.example.net"),
                    .release(id: ids[1]),
                    .release(id: ids[2], until: 920, reason: "VAPID_REFUSED: push.example.net refuses the key"),
                ], owner: "a", now: 12, maxAttempts: 5)
            #expect(applied == 3)
            let rows = try store.rows()
            #expect(rows[ids[0]]?.state == .ready && rows[ids[0]]?.attempts == 0 && rows[ids[0]]?.availableAt == 910)
            #expect(rows[ids[0]]?.lastError == "HOST_NOT_ALLOWED: push.example.net")
            #expect(rows[ids[1]]?.state == .ready && rows[ids[1]]?.attempts == 0 && rows[ids[1]]?.lastError == nil)
            #expect(rows[ids[1]]?.availableAt == 0)
            #expect(rows[ids[2]]?.attempts == 1 && rows[ids[2]]?.availableAt == 920 && rows[ids[2]]?.lastError == "VAPID_REFUSED: push.example.net refuses the key")
            #expect(try await consumer.lease(owner: "a", limit: 3, now: 909, leaseSeconds: 60, maxAttempts: 5, providers: [.fcm]).map(\.id) == [ids[1]])
        }
    }

    @Test(arguments: Backend.allCases) func fourConsumersLeasingAtOnceNeverShareAMessage(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        try await store.outbox(count: 400)
        // Four consumers, each with a connection of its own, lease at once until nothing is left.
        let database = store.database
        let ids = try await withThrowingTaskGroup(of: [Int64].self) { group in
            for worker in 0..<4 {
                group.addTask {
                    try await StoreHarness.withConsumer(database) { consumer in
                        var ids: [Int64] = []
                        while case let batch = try await consumer.lease(
                            owner: "w\(worker)", limit: 7, now: 1, leaseSeconds: 60, maxAttempts: 5, providers: [.fcm]), !batch.isEmpty {
                            ids += batch.map(\.id)
                        }
                        return ids
                    }
                }
            }
            var all: [Int64] = []
            for try await ids in group { all += ids }
            return all
        }
        #expect(ids.count == 400)
        #expect(Set(ids).count == 400)
    }

    /// Random events on the store and on the pure model; after each, every row must match.
    @Test(arguments: Backend.allCases, [1, 2, 3, 4] as [UInt64]) func sqlFollowsTheStateMachine(backend: Backend, seed: UInt64) async throws {
        let store = try await StoreHarness(backend)
        let count = 8
        // Every other message has a delivery window (a short day would be kinder to the test, but
        // windows move by whole days); every fourth a TTL that ends inside the test's time.
        try await store.outbox(count: count, availableAt: { i in Int64(i % 3) }) { i in
            i % 2 == 0 ? (Int64(40 + 30 * i), Int64(200 + 40 * i), i % 4 == 0 ? Int64(600 + 300 * i) : 1_000_000) : nil
        }
        try await store.withConsumer { consumer in
            var model = try store.rows()
            var random = SplitMix64(seed: seed)  // seeded, so a failing sequence can be replayed
            var now: Int64 = 0
            let owners = ["a", "b"]
            let maxAttempts = 3
            for _ in 0..<300 {
                now += Int64(random.next() % 20)
                let owner = owners[Int(random.next() % 2)]
                let id = Int64(1 + random.next() % UInt64(count))
                switch random.next() % 7 {
                case 0, 1:
                    let limit = Int(1 + random.next() % 3)
                    let leased = try await consumer.lease(owner: owner, limit: limit, now: now, leaseSeconds: 30, maxAttempts: maxAttempts, providers: [.fcm])
                    for key in model.keys {
                        model[key]!.apply(.expire(now: now, maxAttempts: maxAttempts))
                        model[key]!.apply(.settleWindow(now: now))
                    }
                    let due = model.filter { $0.value.isDue(now: now) }
                        .sorted { ($0.value.availableAt, $0.key) < ($1.value.availableAt, $1.key) }.prefix(limit).map(\.key)
                    #expect(leased.map(\.id) == due.sorted())
                    for key in due { model[key]!.apply(.lease(owner: owner, now: now, until: now + 30)) }
                case 2:
                    try await consumer.settle([.sent(id: id, name: "n\(now)")], owner: owner, now: now, maxAttempts: maxAttempts)
                    model[id]!.apply(.ack(owner: owner, name: "n\(now)", now: now))
                case 3:
                    let at = now + Int64(random.next() % 40)
                    try await consumer.settle([.retry(id: id, at: at, error: "E\(now)")], owner: owner, now: now, maxAttempts: maxAttempts)
                    model[id]!.apply(.nack(owner: owner, retryAt: at, error: "E\(now)", maxAttempts: maxAttempts, now: now))
                case 4:
                    if random.next() % 2 == 0 {
                        try await consumer.settle([.dead(id: id, reason: "D")], owner: owner, now: now, maxAttempts: maxAttempts)
                        model[id]!.apply(.kill(owner: owner, reason: "D", now: now))
                    } else {
                        try await consumer.settle([.release(id: id)], owner: owner, now: now, maxAttempts: maxAttempts)
                        model[id]!.apply(.release(owner: owner))
                    }
                case 5:
                    let holds = model[id]!.state == .leased && model[id]!.leaseOwner == owner
                    #expect(try await consumer.extendLeases(ids: [id], owner: owner, until: now + 45) == (holds ? [id] : []))
                    model[id]!.apply(.extend(owner: owner, until: now + 45))
                default:
                    if random.next() % 4 == 0 {
                        _ = try await consumer.requeueDead(reasonPrefix: nil, week: nil, now: now)
                        for key in model.keys { model[key]!.apply(.requeue(now: now)) }
                    }
                }
                let stored = try store.rows()
                #expect(stored == model)
                if stored != model { break }
            }
        }
    }
}
