/// `--deliver-at habit`: each reader's due time from their reading hour (docs/001, "Delivery time").
extension BatchComposer {
    /// Where a reader's reads start: the digest's (``DigestBuilder/historyStart(of:span:)``, further
    /// back for a reader with a pace), and with habit
    /// timing at least the local Monday three weeks before the week's, a day early so that no
    /// daylight-saving change between them hides a read.
    package func readsStart(of window: WeekWindow, span: CoveredSpan? = nil) -> Int64 {
        let digest = builder.historyStart(of: window, span: span)
        guard habit != nil else { return digest }
        return min(digest, window.start - Int64(ReadingHabit.weeks - 1) * 7 * 86_400 - 86_400)
    }

    /// The local time the reader's message is due at and why: without habit timing the delivery
    /// time; with it, the reader's habit hour (moved out of the quiet hours), or the delivery time for
    /// a reader without a habit (`fallback`) or in the control group (`control`).
    package func deliveryChoice(for reader: Reader, window: WeekWindow, reads: [ReadEvent]) -> DeliveryChoice {
        let fallback = calendar.delivery.hour * 60 + calendar.delivery.minute
        guard let habit else { return DeliveryChoice(timing: nil, minuteOfDay: fallback) }
        let offsets = calendar.zoneOffsets(forZone: reader.timeZone)
        // The weeks in local wall-clock time: Monday 00:00 three weeks before the week's to its end.
        let weekStart = offsets.local(window.start)
        let from = weekStart - Int64(ReadingHabit.weeks - 1) * 7 * 86_400
        let until = weekStart + 7 * 86_400
        let tally = ReadingHabit.tally(
            localTimes: reads.lazy.map { offsets.local($0.readAt) }.filter { $0 >= from && $0 < until })
        guard let hour = tally.hour else { return DeliveryChoice(timing: .fallback, minuteOfDay: fallback, tally: tally) }
        if habit.control?.contains(userID: reader.id, week: calendar.week) == true {
            return DeliveryChoice(timing: .control, minuteOfDay: fallback, tally: tally)
        }
        return DeliveryChoice(
            timing: .habit, minuteOfDay: ReadingHabit.dueMinute(habitHour: hour, quiet: calendar.quietHours), tally: tally)
    }

    /// When a reader's message becomes due (``slot(for:)``) at the chosen local time.
    package func slot(for reader: Reader, choice: DeliveryChoice?) -> DeliverySlot {
        guard let choice, choice.timing == .habit, sendNow == nil else { return slot(for: reader) }
        let ttl = Int64(planner.encoder.configuration.ttlSeconds)
        return calendar.slot(forZone: reader.timeZone, minuteOfDay: choice.minuteOfDay, now: now, ttl: ttl)
    }
}
