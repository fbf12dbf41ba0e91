/// The SQLite schema, as numbered migrations applied in order inside transactions.
package enum SQLiteSchema {
    /// One migration: SQL run as it is (a string literal), or statements that need values read from
    /// the database first.
    struct Migration: ExpressibleByStringLiteral, Sendable {
        let apply: @Sendable (SQLiteConnection) throws -> Void

        init(stringLiteral sql: String) {
            apply = { try $0.execute(sql) }
        }

        init(_ apply: @escaping @Sendable (SQLiteConnection) throws -> Void) {
            self.apply = apply
        }
    }

    static let migrations: [Migration] = [
        // 1: history, outbox, run bookkeeping.
        """
        CREATE TABLE users (
            pk INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            locale TEXT NOT NULL,
            time_zone TEXT NOT NULL,
            opted_out INTEGER NOT NULL DEFAULT 0
        );
        CREATE TABLE devices (
            user_pk INTEGER NOT NULL REFERENCES users(pk) ON DELETE CASCADE,
            token TEXT NOT NULL,
            platform TEXT NOT NULL CHECK (platform IN ('android', 'ios', 'web')),
            PRIMARY KEY (user_pk, token)
        ) WITHOUT ROWID;
        CREATE TABLE articles (
            pk INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            title TEXT NOT NULL,
            url TEXT NOT NULL,
            image_url TEXT,
            topics TEXT NOT NULL,
            published_at INTEGER NOT NULL,
            reading_minutes INTEGER NOT NULL
        );
        CREATE INDEX articles_published_at ON articles (published_at);
        CREATE TABLE reads (
            user_pk INTEGER NOT NULL,
            read_at INTEGER NOT NULL,
            article_pk INTEGER NOT NULL,
            seconds INTEGER NOT NULL,
            PRIMARY KEY (user_pk, read_at, article_pk)
        ) WITHOUT ROWID;
        CREATE TABLE digest_outbox (
            id INTEGER PRIMARY KEY,
            dedupe_key TEXT NOT NULL UNIQUE,
            week TEXT NOT NULL,
            user_id TEXT NOT NULL,
            platform TEXT NOT NULL,
            variant TEXT NOT NULL,
            message TEXT NOT NULL,
            report TEXT NOT NULL,
            available_at INTEGER NOT NULL,
            state TEXT NOT NULL DEFAULT 'ready' CHECK (state IN ('ready', 'leased', 'sent', 'dead')),
            attempts INTEGER NOT NULL DEFAULT 0,
            leased_until INTEGER,
            lease_owner TEXT,
            last_error TEXT,
            created_at INTEGER NOT NULL,
            sent_at INTEGER
        );
        CREATE INDEX digest_outbox_lease ON digest_outbox (state, available_at);
        CREATE TABLE digest_runs (
            week TEXT PRIMARY KEY,
            cursor INTEGER NOT NULL DEFAULT 0,
            state TEXT NOT NULL CHECK (state IN ('running', 'done')),
            started_at INTEGER NOT NULL,
            finished_at INTEGER,
            counters TEXT NOT NULL DEFAULT '{}'
        );
        """,
        // 2: the consumer contract: FCM's message name on sent messages; retries found fast.
        """
        ALTER TABLE digest_outbox ADD COLUMN fcm_name TEXT;
        CREATE INDEX digest_outbox_retrying ON digest_outbox (available_at) WHERE state = 'ready' AND attempts > 0;
        """,
        // 3: articles' languages; a reader's reads of the candidates found by article (never-read-ever);
        // each user's picks per week, written with the outbox rows (no repeats in later weeks).
        """
        ALTER TABLE articles ADD COLUMN language TEXT;
        CREATE INDEX reads_article ON reads (article_pk, user_pk);
        CREATE TABLE digest_picks (
            user_id TEXT NOT NULL,
            week TEXT NOT NULL,
            picks TEXT NOT NULL,
            PRIMARY KEY (user_id, week)
        ) WITHOUT ROWID;
        """,
        // 4: delivery windows (quiet hours, expiry: state 'expired', which the state check gains, so the
        // outbox is rebuilt); rolling runs: users in a sequence that grows when a user is added, moves
        // zone or gains a device, walked per zone from each (week, zone)'s cursor; the candidates' old
        // reads found by article and time (only the old ones, whichever users a batch holds).
        """
        CREATE TABLE digest_outbox_v4 (
            id INTEGER PRIMARY KEY,
            dedupe_key TEXT NOT NULL UNIQUE,
            week TEXT NOT NULL,
            user_id TEXT NOT NULL,
            platform TEXT NOT NULL,
            variant TEXT NOT NULL,
            message TEXT NOT NULL,
            report TEXT NOT NULL,
            available_at INTEGER NOT NULL,
            state TEXT NOT NULL DEFAULT 'ready' CHECK (state IN ('ready', 'leased', 'sent', 'dead', 'expired')),
            attempts INTEGER NOT NULL DEFAULT 0,
            leased_until INTEGER,
            lease_owner TEXT,
            last_error TEXT,
            created_at INTEGER NOT NULL,
            sent_at INTEGER,
            fcm_name TEXT,
            window_end INTEGER,
            quiet_until INTEGER,
            expires_at INTEGER
        );
        INSERT INTO digest_outbox_v4 (id, dedupe_key, week, user_id, platform, variant, message, report, available_at,
            state, attempts, leased_until, lease_owner, last_error, created_at, sent_at, fcm_name)
        SELECT id, dedupe_key, week, user_id, platform, variant, message, report, available_at,
            state, attempts, leased_until, lease_owner, last_error, created_at, sent_at, fcm_name FROM digest_outbox;
        DROP TABLE digest_outbox;
        ALTER TABLE digest_outbox_v4 RENAME TO digest_outbox;
        CREATE INDEX digest_outbox_lease ON digest_outbox (state, available_at);
        CREATE INDEX digest_outbox_retrying ON digest_outbox (available_at) WHERE state = 'ready' AND attempts > 0;
        CREATE INDEX digest_outbox_window ON digest_outbox (window_end) WHERE state = 'ready' AND window_end IS NOT NULL;
        CREATE INDEX digest_outbox_expiry ON digest_outbox (expires_at) WHERE state = 'ready' AND expires_at IS NOT NULL;
        ALTER TABLE users ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
        UPDATE users SET seq = pk;
        CREATE UNIQUE INDEX users_seq ON users (seq);
        CREATE INDEX users_zone ON users (time_zone, seq);
        CREATE TRIGGER users_seq_insert AFTER INSERT ON users WHEN NEW.seq = 0
        BEGIN UPDATE users SET seq = (SELECT max(seq) + 1 FROM users) WHERE pk = NEW.pk; END;
        DROP INDEX reads_article;
        CREATE INDEX reads_article_time ON reads (article_pk, read_at);
        CREATE TABLE digest_zone_runs (
            week TEXT NOT NULL,
            time_zone TEXT NOT NULL,
            cursor INTEGER NOT NULL,
            ends_at INTEGER NOT NULL,
            users INTEGER NOT NULL DEFAULT 0,
            updated_at INTEGER NOT NULL,
            PRIMARY KEY (week, time_zone)
        ) WITHOUT ROWID;
        """,
        // 5: dead tokens stay dead: FCM's UNREGISTERED answers remembered by token (devices are no
        // longer deleted, so a re-import cannot bring one back), alive again once the app registers
        // the token after its death (`registered_at`); one device, one reader: at most one message a
        // week per token (`token_key`, `<week>:<sha256 of token>`; NULL on rows from before).
        """
        CREATE TABLE digest_dead_tokens (
            token TEXT PRIMARY KEY,
            died_at INTEGER NOT NULL,
            reason TEXT NOT NULL
        ) WITHOUT ROWID;
        ALTER TABLE devices ADD COLUMN registered_at INTEGER;
        CREATE INDEX devices_token ON devices (token);
        ALTER TABLE digest_outbox ADD COLUMN token_key TEXT;
        CREATE UNIQUE INDEX digest_outbox_token ON digest_outbox (token_key);
        """,
        // 6: retention: when a message became sent, dead or expired (`settled_at`, written by the
        // consumers' settle statements, cleared by a requeue); its settle time, found by index, is
        // `settled_at`, or for rows settled before the column `sent_at`, `expires_at` or
        // `available_at` (the expression is `SQLiteRetentionQueries.settleTime`, word for word, so the
        // prune's batches use the index).
        """
        ALTER TABLE digest_outbox ADD COLUMN settled_at INTEGER;
        CREATE INDEX digest_outbox_settled
            ON digest_outbox (coalesce(settled_at, CASE state WHEN 'sent' THEN sent_at WHEN 'expired' THEN expires_at ELSE available_at END))
            WHERE state IN ('sent', 'dead', 'expired');
        """,
        // 7: one message per token a week, at the cost of the few tokens that change reader. The import
        // keeps a token under one reader, so two messages a week to one token can only come from a token
        // that left a reader (`digest_departed_tokens`, by the token's hash, written by the import); only
        // those messages carry a `token_key`, and the leaving reader's rows of the weeks that can still be
        // walked get theirs when it leaves. A unique index over every row cost the weekly run half again
        // its CPU time (its keys are hashes: every insert lands on a random page).
        """
        CREATE TABLE digest_departed_tokens (
            token_hash TEXT PRIMARY KEY,
            left_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        DROP INDEX digest_outbox_token;
        CREATE UNIQUE INDEX digest_outbox_token ON digest_outbox (token_key) WHERE token_key IS NOT NULL;
        """,
        // 8: analytics: each message's id as the apps report it (`message_id` in its data; NULL on
        // rows from before, whose messages carry none), found by the event collector; the locale whose
        // templates composed it, for the report. Its index came later (10).
        """
        ALTER TABLE digest_outbox ADD COLUMN message_id TEXT;
        ALTER TABLE digest_outbox ADD COLUMN locale TEXT;
        """,
        // 9: app events (`digest collect`): one row per message, type and action (`''` for types
        // without one), keyed by week first (the message id decides the week, so the week's report
        // reads one range of the key and no second index is written), with what the report groups by
        // copied from the message (week, variant, platform, locale, A/B arm), so a week's figures
        // outlive its pruned outbox rows; the sent messages a prune deletes, counted by the same
        // groups (`''` for no locale or arm) in the prune's own transactions, so `sent` outlives them.
        """
        CREATE TABLE digest_events (
            message_id TEXT NOT NULL,
            type TEXT NOT NULL CHECK (type IN ('received', 'displayed', 'opened', 'dismissed', 'action')),
            action TEXT NOT NULL DEFAULT '',
            at INTEGER NOT NULL,
            received_at INTEGER NOT NULL,
            week TEXT NOT NULL,
            variant TEXT NOT NULL,
            platform TEXT NOT NULL,
            locale TEXT,
            arm TEXT,
            PRIMARY KEY (week, message_id, type, action)
        ) WITHOUT ROWID;
        CREATE INDEX digest_outbox_week_state ON digest_outbox (week, state);
        CREATE TABLE digest_pruned_sent (
            week TEXT NOT NULL,
            variant TEXT NOT NULL,
            platform TEXT NOT NULL,
            locale TEXT NOT NULL,
            arm TEXT NOT NULL,
            sent INTEGER NOT NULL,
            PRIMARY KEY (week, variant, platform, locale, arm)
        ) WITHOUT ROWID;
        """,
        // 10: the unique index the event collector finds messages by. Ids lead with the run's instant
        // and the message's place in the run (`OutboxMessage.messageID(dedupeKey:position:)`), so a
        // run writes it at its right edge; earlier ids (hashes) stay findable. `digest collect` made it
        // when it opened a store before this migration: IF NOT EXISTS keeps that one.
        """
        CREATE UNIQUE INDEX IF NOT EXISTS digest_outbox_message ON digest_outbox (message_id);
        """,
        // 11: no `(week, state)` index: every enqueue wrote it and every lease and settle of the
        // sender moved its entry, for the one query that used it, a week's report, which reads the
        // week's range of the dedupe key's index instead (each key starts with `<week>:`).
        """
        DROP INDEX IF EXISTS digest_outbox_week_state;
        """,
        // 12: a device's place in its reader's `devices` list (0 first; NULL on rows from before, until
        // an import lists them again), which orders undated devices when a reader has more than a run
        // sends to (`DeviceSelection`). No rewrite: a column without a default.
        """
        ALTER TABLE devices ADD COLUMN list_position INTEGER;
        """,
        // 13: providers (docs/001): a device names its push service (`provider`, FCM for the rows from
        // before) and may name its app (`topic`, an APNs bundle id); an outbox row names its provider,
        // the token it goes to (`target`, which the dead-device memory, the token key and prune read
        // instead of an FCM path; backfilled from the FCM bodies of the rows from before) and the APNs
        // headers (`headers`, NULL for FCM). Columns with constant defaults: no table rebuild; the
        // backfill rewrites each row once.
        """
        ALTER TABLE devices ADD COLUMN provider TEXT NOT NULL DEFAULT 'fcm' CHECK (provider IN ('fcm', 'apns'));
        ALTER TABLE devices ADD COLUMN topic TEXT;
        ALTER TABLE digest_outbox ADD COLUMN provider TEXT NOT NULL DEFAULT 'fcm' CHECK (provider IN ('fcm', 'apns'));
        ALTER TABLE digest_outbox ADD COLUMN target TEXT NOT NULL DEFAULT '';
        ALTER TABLE digest_outbox ADD COLUMN headers TEXT;
        UPDATE digest_outbox SET target = coalesce(json_extract(message, '$.message.token'), '');
        """,
        // 14: delivery timing (docs/001): how a row's due time was chosen (`timing`: `habit`,
        // `fallback` or `control` under `--deliver-at habit`, NULL otherwise and on the rows from
        // before) and the local time chosen (`due_local`, `HH:MM`). Columns without a default: no
        // rewrite.
        """
        ALTER TABLE digest_outbox ADD COLUMN timing TEXT CHECK (timing IN ('habit', 'fallback', 'control'));
        ALTER TABLE digest_outbox ADD COLUMN due_local TEXT;
        """,
        // 15: standard Web Push (docs/001): a device keeps its subscription's keys (`keys_p256dh`,
        // `keys_auth`, base64url as the browser gave them; NULL for FCM and APNs), and `webpush` joins
        // the providers `devices` and `digest_outbox` admit. SQLite cannot alter a CHECK; rebuilding the
        // outbox to widen one would rewrite every row and index of the largest table, so the stored
        // schema text is edited instead (``widenProviderChecks(_:)``).
        Migration { connection in
            try connection.execute(
                """
                ALTER TABLE devices ADD COLUMN keys_p256dh TEXT;
                ALTER TABLE devices ADD COLUMN keys_auth TEXT;
                """)
            try widenProviderChecks(connection)
        },
        // 16: test sends (docs/004, `digest send-test`): a message sent to an editor's own device is
        // never in the outbox; its id is kept here so that `digest collect` takes the device's events,
        // which go to their own table and into no report; the sends a minute per device are counted
        // from it.
        """
        CREATE TABLE digest_test_sends (
            message_id TEXT PRIMARY KEY,
            sent_at INTEGER NOT NULL,
            device TEXT NOT NULL,
            user_id TEXT NOT NULL,
            week TEXT NOT NULL,
            provider TEXT NOT NULL,
            platform TEXT NOT NULL,
            variant TEXT NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX digest_test_sends_device ON digest_test_sends (device, sent_at);
        CREATE TABLE digest_test_events (
            message_id TEXT NOT NULL,
            type TEXT NOT NULL,
            action TEXT NOT NULL DEFAULT '',
            at INTEGER NOT NULL,
            received_at INTEGER NOT NULL,
            PRIMARY KEY (message_id, type, action)
        ) WITHOUT ROWID;
        """,
        // 17: readers' preferences (docs/010, "Preferences"): on `users`, NULL for a reader who chose
        // nothing (most of them), so the run reads them with the row at no cost; `pref_every` NULL
        // means none stored (`off` stays `opted_out`); `pref_from` an ISO week (`2026-W45`),
        // `pref_paused_until` a date (`2026-12-14`), `pref_follow`/`pref_mute` topics joined with a
        // line feed (a topic holds no control character; NULL for none); `pref_version` 0 until the
        // first change, raised by each. Every change is recorded (`digest_preference_changes`: before
        // and after as `ReaderPreferences.json`), found by reader, newest first. Columns with constant
        // defaults: no rewrite.
        """
        ALTER TABLE users ADD COLUMN pref_every INTEGER;
        ALTER TABLE users ADD COLUMN pref_from TEXT;
        ALTER TABLE users ADD COLUMN pref_paused_until TEXT;
        ALTER TABLE users ADD COLUMN pref_follow TEXT;
        ALTER TABLE users ADD COLUMN pref_mute TEXT;
        ALTER TABLE users ADD COLUMN pref_version INTEGER NOT NULL DEFAULT 0;
        CREATE TABLE digest_preference_changes (
            id INTEGER PRIMARY KEY,
            user_pk INTEGER NOT NULL REFERENCES users(pk) ON DELETE CASCADE,
            at INTEGER NOT NULL,
            source TEXT NOT NULL CHECK (source IN ('import', 'api', 'cli', 'action')),
            message_id TEXT,
            before TEXT NOT NULL,
            after TEXT NOT NULL
        );
        CREATE INDEX digest_preference_changes_user ON digest_preference_changes (user_pk, at, id);
        """,
        // 18: the notification's buttons (docs/009, "Actions"): `pref_fewer` the topics a "Fewer like
        // this" press holds back, a line each, `topic<TAB>until` (Unix seconds; NULL for none), changed
        // only by presses; a change's `action` (`fewer`, `pause`, `off`; NULL for other sources) for
        // "the first press of a week wins".
        """
        ALTER TABLE users ADD COLUMN pref_fewer TEXT;
        ALTER TABLE digest_preference_changes ADD COLUMN action TEXT;
        """,
    ]

    /// The version a store has once every migration ran.
    package static var latestVersion: Int { migrations.count }

    /// The `provider` CHECK of migration 13, as SQLite keeps it in the tables' schema text, and what
    /// migration 15 makes of it.
    static let narrowProviderCheck = "CHECK (provider IN ('fcm', 'apns'))"
    static let wideProviderCheck = "CHECK (provider IN ('fcm', 'apns', 'webpush'))"

    /// Widens the `provider` CHECK of `devices` and `digest_outbox` by editing their `CREATE TABLE`
    /// text in `sqlite_schema`, as sqlite.org's ALTER TABLE page describes for changes that leave every
    /// stored row valid ("Making Other Kinds Of Table Schema Changes"): no row or index is touched,
    /// whatever the tables hold. Runs inside the migration's transaction, so a failure leaves the old
    /// text. Every row of the old schema passes the wider check, so no row needs checking again;
    /// what is checked is that each table's text held the old constraint once and now holds the new
    /// one, and that both tables' new text parses.
    static func widenProviderChecks(_ connection: SQLiteConnection) throws {
        let tables = "('devices', 'digest_outbox')"
        func count(_ text: String) throws -> Int {
            let statement = try connection.statement(
                "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN \(tables) AND instr(sql, ?1) > 0")
            defer { statement.reset() }
            statement.bind(text, at: 1)
            return try statement.step() ? statement.int(0) : 0
        }
        guard try count(narrowProviderCheck) == 2 else {
            throw SQLiteError(
                code: 1, message: "migration 15: devices and digest_outbox do not both hold \(narrowProviderCheck)", path: connection.path)
        }
        let version = try connection.statement("PRAGMA schema_version")
        let schemaVersion = try version.step() ? version.int(0) : 0
        version.reset()
        try connection.execute("PRAGMA writable_schema = ON")
        // The setting belongs to the connection, not the transaction: off again whatever happens.
        defer { try? connection.execute("PRAGMA writable_schema = OFF") }
        let edit = try connection.statement(
            "UPDATE sqlite_schema SET sql = replace(sql, ?1, ?2) WHERE type = 'table' AND name IN \(tables)")
        edit.bind(narrowProviderCheck, at: 1)
        edit.bind(wideProviderCheck, at: 2)
        try edit.run()
        try connection.execute("PRAGMA schema_version = \(schemaVersion + 1)")
        // The new schema version makes every connection, this one too, read the schema text again.
        guard try count(wideProviderCheck) == 2, try count(narrowProviderCheck) == 0 else {
            throw SQLiteError(code: 1, message: "migration 15: the provider checks were not widened", path: connection.path)
        }
        try connection.execute("SELECT provider FROM devices LIMIT 0; SELECT provider FROM digest_outbox LIMIT 0")
    }

    /// Applies the migrations the database lacks, up to `last` (tests make stores of an earlier
    /// version so); returns the versions before and after.
    package static func migrate(_ connection: SQLiteConnection, through last: Int? = nil) throws -> (from: Int, to: Int) {
        let target = min(last ?? migrations.count, migrations.count)
        try connection.execute("CREATE TABLE IF NOT EXISTS digest_schema (version INTEGER NOT NULL)")
        let current = try version(connection)
        guard current <= migrations.count else {
            throw SQLiteError(
                refusing: "schema version \(current) is newer than this digest (\(migrations.count)): upgrade digest", path: connection.path)
        }
        for index in current..<max(current, target) {
            try connection.transaction {
                try migrations[index].apply(connection)
                try connection.execute("DELETE FROM digest_schema; INSERT INTO digest_schema VALUES (\(index + 1))")
            }
        }
        return (current, max(current, target))
    }

    static func version(_ connection: SQLiteConnection) throws(SQLiteError) -> Int {
        let statement = try connection.statement("SELECT max(version) FROM digest_schema")
        defer { statement.reset() }
        return try statement.step() ? statement.int(0) : 0
    }
}
