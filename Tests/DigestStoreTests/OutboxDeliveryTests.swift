import DigestStore
import Testing

/// The message lifecycle, without I/O.
@Suite struct OutboxDeliveryTests {
    typealias Delivery = OutboxDelivery

    @Test func aDueMessageIsLeasedSentAndThenLeftAlone() {
        var message = Delivery(availableAt: 100)
        #expect(message.apply(.lease(owner: "a", now: 99, until: 160)) == .failure(.notDue))
        #expect(message.apply(.lease(owner: "a", now: 100, until: 160)) == .success(.leased))
        #expect(message.attempts == 1 && message.leaseOwner == "a" && message.leasedUntil == 160)
        #expect(message.apply(.lease(owner: "b", now: 100, until: 160)) == .failure(.notDue))
        #expect(message.apply(.ack(owner: "b", name: "n", now: 101)) == .failure(.notHolder))
        #expect(message.apply(.ack(owner: "a", name: "projects/p/messages/1", now: 101)) == .success(.sent))
        #expect(message.fcmName == "projects/p/messages/1" && message.sentAt == 101 && message.leaseOwner == nil)
        #expect(message.settledAt == 101)
        // A settled message takes no further holder events.
        #expect(message.apply(.nack(owner: "a", retryAt: 200, error: "x", maxAttempts: 5, now: 150)) == .failure(.notHolder))
        #expect(message.apply(.requeue(now: 300)) == .failure(.notDead))
        #expect(message.state == .sent)
    }

    @Test func aNackWaitsForItsRetryTimeAndTheLastAttemptDies() {
        var message = Delivery(availableAt: 0)
        for attempt in 1...3 {
            #expect(message.apply(.lease(owner: "a", now: Int64(attempt * 100), until: Int64(attempt * 100 + 60))) == .success(.leased))
            let result = message.apply(
                .nack(owner: "a", retryAt: Int64(attempt * 100 + 50), error: "UNAVAILABLE: 503", maxAttempts: 3, now: Int64(attempt * 100 + 1)))
            if attempt < 3 {
                #expect(result == .success(.ready))
                #expect(message.settledAt == nil)
                #expect(message.availableAt == Int64(attempt * 100 + 50))
                #expect(!message.isDue(now: Int64(attempt * 100 + 49)))
            } else {
                #expect(result == .success(.dead))
                #expect(message.lastError == "UNAVAILABLE: 503 (gave up after 3 attempts)")
                #expect(message.settledAt == 301)
            }
        }
        #expect(message.apply(.requeue(now: 999)) == .success(.ready))
        #expect(message.attempts == 0 && message.availableAt == 999 && message.isDue(now: 999))
        #expect(message.settledAt == nil)
    }

    @Test func anExpiredLeaseReturnsTheMessageToReady() {
        var message = Delivery(availableAt: 0)
        message.apply(.lease(owner: "a", now: 10, until: 70))
        #expect(message.apply(.expire(now: 69, maxAttempts: 5)) == .failure(.notExpired))
        #expect(message.apply(.extend(owner: "a", until: 130)) == .success(.leased))
        #expect(message.apply(.expire(now: 129, maxAttempts: 5)) == .failure(.notExpired))
        #expect(message.apply(.expire(now: 130, maxAttempts: 5)) == .success(.ready))
        // The old holder lost it: its late ack does nothing; the new holder's does.
        #expect(message.apply(.lease(owner: "b", now: 131, until: 190)) == .success(.leased))
        #expect(message.attempts == 2)
        #expect(message.apply(.ack(owner: "a", name: "late", now: 132)) == .failure(.notHolder))
        #expect(message.apply(.extend(owner: "a", until: 500)) == .failure(.notHolder))
        #expect(message.apply(.ack(owner: "b", name: "ok", now: 132)) == .success(.sent))
    }

    @Test func anExpiredLeaseWithNoAttemptsLeftIsDead() {
        var message = Delivery(availableAt: 0)
        message.apply(.lease(owner: "a", now: 0, until: 1))
        #expect(message.apply(.expire(now: 5, maxAttempts: 1)) == .success(.dead))
        #expect(message.lastError?.hasPrefix("LEASE_EXPIRED") == true)
        #expect(message.settledAt == 5)
    }

    @Test func aReleasedLeaseDoesNotCountAsAnAttempt() {
        var message = Delivery(availableAt: 0)
        message.apply(.lease(owner: "a", now: 0, until: 60))
        #expect(message.apply(.release(owner: "b")) == .failure(.notHolder))
        #expect(message.apply(.release(owner: "a")) == .success(.ready))
        #expect(message.attempts == 0 && message.leaseOwner == nil && message.isDue(now: 0))
    }

    @Test func killIsFinalUntilRequeued() {
        var message = Delivery(availableAt: 0)
        message.apply(.lease(owner: "a", now: 0, until: 60))
        #expect(message.apply(.kill(owner: "a", reason: "INVALID_ARGUMENT: bad ttl", now: 7)) == .success(.dead))
        #expect(message.settledAt == 7)
        #expect(message.apply(.lease(owner: "a", now: 1, until: 60)) == .failure(.notDue))
        #expect(message.apply(.expire(now: 1000, maxAttempts: 1)) == .failure(.notExpired))
        #expect(message.lastError == "INVALID_ARGUMENT: bad ttl")
    }
}
