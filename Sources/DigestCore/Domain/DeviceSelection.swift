/// Which of a reader's devices a run sends to, and in what order: the one definition both stores'
/// readers apply (SQLite while streaming a batch's device rows, PostgreSQL in its devices query), so
/// the weekly run, rolling runs and the previews all see the same devices.
///
/// A reader's live devices (those left once dead tokens are filtered out; the import already keeps a
/// token under one reader) are ordered by
/// 1. `registeredAt`, the newest first; devices without one after every dated device;
/// 2. then their place in the reader's `devices` list, the later listed first;
/// 3. then, for rows without a place (an adopter's view without the column, or rows imported before
///    the stores kept it), the token, the greater in byte order first: such rows read as listed in
///    byte order of their tokens;
///
/// and the first ``limit`` of them are the reader's devices. The rest are counted
/// (``Reader/devicesOverLimit``), never sent to. A dead device takes no place, so it frees one.
public enum DeviceSelection {
    /// Devices a reader gets messages on, at most: one message per device a week.
    public static let limit = 20

    /// The SQL `ORDER BY` terms of the rule, for the columns (or expressions) holding a device's
    /// registration instant, its place in the list and its token (with a byte-order collation where
    /// the database's default is another). SQLite and PostgreSQL read the same terms.
    public static func orderSQL(registeredAt: String, listPosition: String, token: String) -> String {
        "\(registeredAt) DESC NULLS LAST, \(listPosition) DESC NULLS LAST, \(token) DESC"
    }
}

extension Reader {
    /// Adds a live device met in ``DeviceSelection`` order: one of the first ``DeviceSelection/limit``
    /// joins ``devices``, a later one is counted in ``devicesOverLimit``.
    public mutating func admit(_ device: Device) {
        if devices.count < DeviceSelection.limit {
            devices.append(device)
        } else {
            devicesOverLimit += 1
        }
    }
}
