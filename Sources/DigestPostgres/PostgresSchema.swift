import Foundation
import PostgresNIO

/// The PostgreSQL schema, as numbered migrations applied in order, each in its own transaction,
/// under an advisory lock so that concurrent `digest migrate` calls take turns.
///
/// History is read through four views (`digest_users`, `digest_devices`, `digest_articles`,
/// `digest_reads`) over the tables `digest import` fills; an adopter may replace the views with
/// views over its own tables (`docs/005-postgresql.md`).
package enum PostgresSchema {
    static let migrations: [String] = [
        // 1: history (tables and the views the job reads), outbox, run coordination.
        """
        CREATE TABLE digest_import_users (
            id text COLLATE "C" PRIMARY KEY,
            locale text NOT NULL,
            time_zone text NOT NULL,
            opted_out boolean NOT NULL DEFAULT false
        );
        CREATE TABLE digest_import_devices (
            user_id text COLLATE "C" NOT NULL REFERENCES digest_import_users (id) ON DELETE CASCADE,
            token text NOT NULL,
            platform text NOT NULL CHECK (platform IN ('android', 'ios', 'web')),
            PRIMARY KEY (user_id, token)
        );
        CREATE TABLE digest_import_articles (
            id text PRIMARY KEY,
            title text NOT NULL,
            url text NOT NULL,
            image_url text,
            topics text[] NOT NULL,
            published_at timestamptz NOT NULL,
            reading_minutes integer NOT NULL
        );
        CREATE INDEX digest_import_articles_published_at ON digest_import_articles (published_at);
        CREATE TABLE digest_import_reads (
            user_id text COLLATE "C" NOT NULL,
            read_at timestamptz NOT NULL,
            article_id text NOT NULL,
            seconds integer NOT NULL,
            PRIMARY KEY (user_id, read_at, article_id)
        );
        CREATE INDEX digest_import_reads_read_at ON digest_import_reads (read_at);
        CREATE VIEW digest_users AS
            SELECT id, locale, time_zone, opted_out FROM digest_import_users;
        CREATE VIEW digest_devices AS
            SELECT user_id, token, platform FROM digest_import_devices;
        CREATE VIEW digest_articles AS
            SELECT id, title, url, image_url, topics, published_at, reading_minutes FROM digest_import_articles;
        CREATE VIEW digest_reads AS
            SELECT user_id, article_id, read_at, seconds FROM digest_import_reads;
        CREATE TABLE digest_unregistered_tokens (
            user_id text NOT NULL,
            token text NOT NULL,
            unregistered_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (user_id, token)
        );
        CREATE TABLE digest_outbox (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            dedupe_key text NOT NULL UNIQUE,
            week text NOT NULL,
            user_id text NOT NULL,
            platform text NOT NULL,
            variant text NOT NULL,
            message jsonb NOT NULL,
            report jsonb NOT NULL,
            available_at timestamptz NOT NULL,
            state text NOT NULL DEFAULT 'ready' CHECK (state IN ('ready', 'leased', 'sent', 'dead')),
            attempts integer NOT NULL DEFAULT 0,
            leased_until timestamptz,
            lease_owner text,
            last_error text,
            created_at timestamptz NOT NULL DEFAULT now(),
            sent_at timestamptz,
            fcm_name text
        );
        CREATE INDEX digest_outbox_lease ON digest_outbox (state, available_at);
        CREATE INDEX digest_outbox_retrying ON digest_outbox (available_at) WHERE state = 'ready' AND attempts > 0;
        CREATE INDEX digest_outbox_leased ON digest_outbox (leased_until) WHERE state = 'leased';
        CREATE INDEX digest_outbox_user ON digest_outbox (user_id, week);
        CREATE TABLE digest_runs (
            week text PRIMARY KEY,
            state text NOT NULL CHECK (state IN ('running', 'done')),
            chunk_size integer NOT NULL,
            chunks integer NOT NULL,
            users bigint NOT NULL,
            started_at timestamptz NOT NULL DEFAULT now(),
            finished_at timestamptz
        );
        CREATE TABLE digest_run_chunks (
            week text NOT NULL REFERENCES digest_runs (week) ON DELETE CASCADE,
            chunk integer NOT NULL,
            after_user text COLLATE "C",
            through_user text COLLATE "C",
            state text NOT NULL DEFAULT 'ready' CHECK (state IN ('ready', 'claimed', 'done')),
            lease_owner text,
            leased_until timestamptz,
            claims integer NOT NULL DEFAULT 0,
            counters jsonb,
            done_by text,
            done_at timestamptz,
            PRIMARY KEY (week, chunk)
        );
        CREATE INDEX digest_run_chunks_open ON digest_run_chunks (week, chunk) WHERE state <> 'done';
        """,
        // 2: a chunk's reads come from the primary key alone (an index-only scan), not one heap page
        // a read.
        """
        ALTER TABLE digest_import_reads DROP CONSTRAINT digest_import_reads_pkey;
        ALTER TABLE digest_import_reads ADD PRIMARY KEY (user_id, read_at, article_id) INCLUDE (seconds);
        """,
        // 3: articles' languages (the view gains the column only while it is still ours: an adopter's
        // own view keeps working without it); a reader's reads of the candidates found by article.
        """
        ALTER TABLE digest_import_articles ADD COLUMN language text;
        DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_views WHERE viewname = 'digest_articles' AND schemaname = current_schema() AND definition LIKE '%digest_import_articles%') THEN CREATE OR REPLACE VIEW digest_articles AS SELECT id, title, url, image_url, topics, published_at, reading_minutes, language FROM digest_import_articles; END IF; END $$;
        CREATE INDEX digest_import_reads_article ON digest_import_reads (article_id, user_id) INCLUDE (read_at);
        CREATE TABLE digest_picks (
            user_id text COLLATE "C" NOT NULL,
            week text NOT NULL,
            picks text[] NOT NULL,
            PRIMARY KEY (user_id, week)
        );
        """,
        // 4: delivery windows: the reader's quiet hours and the message's expiry as UTC instants
        // (docs/001); state 'expired'.
        """
        ALTER TABLE digest_outbox ADD COLUMN window_end timestamptz;
        ALTER TABLE digest_outbox ADD COLUMN quiet_until timestamptz;
        ALTER TABLE digest_outbox ADD COLUMN expires_at timestamptz;
        ALTER TABLE digest_outbox DROP CONSTRAINT digest_outbox_state_check;
        ALTER TABLE digest_outbox ADD CONSTRAINT digest_outbox_state_check CHECK (state IN ('ready', 'leased', 'sent', 'dead', 'expired'));
        CREATE INDEX digest_outbox_window ON digest_outbox (window_end) WHERE state = 'ready' AND window_end IS NOT NULL;
        CREATE INDEX digest_outbox_expiry ON digest_outbox (expires_at) WHERE state = 'ready' AND expires_at IS NOT NULL
        """,
        // 5: rolling runs. Users carry `seq`, a number taken again when a user is added, moves zone or
        // gains a device (the import keeps it; the view gains the column only while it is still ours);
        // each (week, zone) is planned into chunks of `seq` ranges as its week ends, and planned again
        // for the users whose `seq` passed the plan since.
        """
        CREATE SEQUENCE digest_user_seq;
        ALTER TABLE digest_import_users ADD COLUMN seq bigint NOT NULL DEFAULT nextval('digest_user_seq');
        CREATE INDEX digest_import_users_zone ON digest_import_users (time_zone, seq);
        DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_views WHERE viewname = 'digest_users' AND schemaname = current_schema() AND definition LIKE '%digest_import_users%') THEN CREATE OR REPLACE VIEW digest_users AS SELECT id, locale, time_zone, opted_out, seq FROM digest_import_users; END IF; END $$;
        ALTER TABLE digest_run_chunks ADD COLUMN time_zone text;
        ALTER TABLE digest_run_chunks ADD COLUMN after_seq bigint;
        ALTER TABLE digest_run_chunks ADD COLUMN through_seq bigint;
        ALTER TABLE digest_run_chunks ADD COLUMN users integer;
        CREATE UNIQUE INDEX digest_run_chunks_zone ON digest_run_chunks (week, time_zone, through_seq) WHERE time_zone IS NOT NULL;
        CREATE TABLE digest_zone_runs (
            week text NOT NULL,
            time_zone text NOT NULL,
            planned bigint NOT NULL DEFAULT 0,
            ends_at timestamptz NOT NULL,
            PRIMARY KEY (week, time_zone)
        )
        """,
        // 6: dead tokens stay dead: FCM's UNREGISTERED answers remembered by token (beside the
        // adopter's devices, which may be a view), alive again once the app registers the token after
        // its death (`registered_at`: the view gains it while it is ours; an adopter's view without it
        // reads as never registered again); one device, one reader: at most one message a week per
        // token (`token_key`, `<week>:<sha256 of token>`; NULL on rows from before).
        """
        CREATE TABLE digest_dead_tokens (
            token text PRIMARY KEY,
            died_at timestamptz NOT NULL,
            reason text NOT NULL
        );
        INSERT INTO digest_dead_tokens (token, died_at, reason)
            SELECT token, max(unregistered_at), 'UNREGISTERED' FROM digest_unregistered_tokens GROUP BY token;
        DROP TABLE digest_unregistered_tokens;
        ALTER TABLE digest_import_devices ADD COLUMN registered_at timestamptz;
        CREATE INDEX digest_import_devices_token ON digest_import_devices (token);
        DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_views WHERE viewname = 'digest_devices' AND schemaname = current_schema() AND definition LIKE '%digest_import_devices%') THEN CREATE OR REPLACE VIEW digest_devices AS SELECT user_id, token, platform, registered_at FROM digest_import_devices; END IF; END $$;
        ALTER TABLE digest_outbox ADD COLUMN token_key text;
        CREATE UNIQUE INDEX digest_outbox_token ON digest_outbox (token_key)
        """,
        // 7: retention: when a message became sent, dead or expired (`settled_at`, written by the
        // consumers' settle statements, cleared by a requeue; no rewrite of existing rows); its settle
        // time, found by index, is `settled_at`, or for rows settled before the column `sent_at`,
        // `expires_at` or `available_at` (the expression is `PostgresDatabase.settleTime`, word for
        // word, so the prune's batches use the index).
        """
        ALTER TABLE digest_outbox ADD COLUMN settled_at timestamptz;
        CREATE INDEX digest_outbox_settled
            ON digest_outbox ((coalesce(settled_at, CASE state WHEN 'sent' THEN sent_at WHEN 'expired' THEN expires_at ELSE available_at END)))
            WHERE state IN ('sent', 'dead', 'expired')
        """,
        // 8: analytics: each message's id as the apps report it (`message_id` in its data, led by the
        // run's instant and the message's place in the run, so the index is written at its right edge;
        // NULL on rows from before, whose messages carry none), found by the event collector; the
        // locale whose templates composed it, for the report.
        """
        ALTER TABLE digest_outbox ADD COLUMN message_id text;
        ALTER TABLE digest_outbox ADD COLUMN locale text;
        CREATE UNIQUE INDEX digest_outbox_message ON digest_outbox (message_id)
        """,
        // 9: app events (`digest collect`, any number of collectors): one row per message, type and
        // action (`''` for types without one), keyed by week first (the message id decides the week,
        // so the week's report reads one range of the key and no second index is written), with what
        // the report groups by copied from the message (week, variant, platform, locale, A/B arm), so
        // a week's figures outlive its pruned outbox rows; the sent messages a prune deletes, counted
        // by the same groups (`''` for no locale or arm) in the prune's own statements.
        """
        CREATE TABLE digest_events (
            message_id text NOT NULL,
            type text NOT NULL CHECK (type IN ('received', 'displayed', 'opened', 'dismissed', 'action')),
            action text NOT NULL DEFAULT '',
            at timestamptz NOT NULL,
            received_at timestamptz NOT NULL,
            week text NOT NULL,
            variant text NOT NULL,
            platform text NOT NULL,
            locale text,
            arm text,
            PRIMARY KEY (week, message_id, type, action)
        );
        CREATE INDEX digest_outbox_week_state ON digest_outbox (week, state);
        CREATE TABLE digest_pruned_sent (
            week text NOT NULL,
            variant text NOT NULL,
            platform text NOT NULL,
            locale text NOT NULL,
            arm text NOT NULL,
            sent bigint NOT NULL,
            PRIMARY KEY (week, variant, platform, locale, arm)
        )
        """,
        // 10: one message a token a week, checked through a hash index (an exclusion constraint, which
        // `ON CONFLICT DO NOTHING` honours as it did the unique index): the keys are hashes either way,
        // so every enqueue touches a random page of the index, and a hash index's entries (a 4-byte
        // hash code and the row's place) make it a fraction of the B-tree of 70-byte keys it replaces.
        // NULLs (rows from before migration 6) conflict with nothing, as before.
        """
        DROP INDEX digest_outbox_token;
        ALTER TABLE digest_outbox ADD CONSTRAINT digest_outbox_token EXCLUDE USING hash (token_key WITH =)
        """,
        // 11: the outbox keeps the bytes that were encoded and budgeted: `message` becomes `json`, which
        // stores its text as given (checked, not re-encoded), so a consumer's `message::text` is what
        // the run wrote, byte for byte as on SQLite; the `#>>` paths prune and the dead-token lookup read
        // work on `json` too. Existing rows keep jsonb's rendering of their message. The change rewrites
        // the table and its indexes under an ACCESS EXCLUSIVE lock (docs/005: how long, what senders see).
        """
        ALTER TABLE digest_outbox ALTER COLUMN message TYPE json USING message::json
        """,
        // 12: a device's place in its reader's `devices` list (`list_position`, 0 first; NULL on rows from
        // before, until an import lists them again), which orders undated devices when a reader has more
        // than a run sends to (`DeviceSelection`); the view gains it while it is ours (an adopter's view
        // without it reads as listed in byte order of token). A column without a default: a catalog
        // change, no rewrite. (Numbered after the outbox's migration 11, `message` as `json`.)
        """
        ALTER TABLE digest_import_devices ADD COLUMN list_position integer;
        DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_views WHERE viewname = 'digest_devices' AND schemaname = current_schema() AND definition LIKE '%digest_import_devices%') THEN CREATE OR REPLACE VIEW digest_devices AS SELECT user_id, token, platform, registered_at, list_position FROM digest_import_devices; END IF; END $$
        """,
        // 13: providers (docs/001): a device names its push service (`provider`, FCM for the rows from
        // before) and may name its app (`topic`, an APNs bundle id); the view gains both while it is ours
        // (an adopter's view without them reads as FCM, no topic). An outbox row names its provider, the
        // token it goes to (`target`, which the dead-device memory, the token key and prune read instead
        // of an FCM path; backfilled from the FCM bodies of the rows from before: one rewrite of each
        // row) and the APNs headers (`headers`, NULL for FCM). Constant defaults: catalog changes.
        """
        ALTER TABLE digest_import_devices ADD COLUMN provider text NOT NULL DEFAULT 'fcm' CHECK (provider IN ('fcm', 'apns'));
        ALTER TABLE digest_import_devices ADD COLUMN topic text;
        DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_views WHERE viewname = 'digest_devices' AND schemaname = current_schema() AND definition LIKE '%digest_import_devices%') THEN CREATE OR REPLACE VIEW digest_devices AS SELECT user_id, token, platform, registered_at, list_position, provider, topic FROM digest_import_devices; END IF; END $$;
        ALTER TABLE digest_outbox ADD COLUMN provider text NOT NULL DEFAULT 'fcm' CHECK (provider IN ('fcm', 'apns'));
        ALTER TABLE digest_outbox ADD COLUMN target text NOT NULL DEFAULT '';
        ALTER TABLE digest_outbox ADD COLUMN headers json;
        UPDATE digest_outbox SET target = coalesce(message #>> '{message,token}', '')
        """,
        // 14: delivery timing (docs/001): how a row's due time was chosen (`timing`: `habit`,
        // `fallback` or `control` under `--deliver-at habit`, NULL otherwise and on the rows from
        // before) and the local time chosen (`due_local`, `HH:MM`). No defaults: catalog changes.
        """
        ALTER TABLE digest_outbox ADD COLUMN timing text CHECK (timing IN ('habit', 'fallback', 'control'));
        ALTER TABLE digest_outbox ADD COLUMN due_local text
        """,
        // 15: standard Web Push (docs/001): a device keeps its subscription's keys (`keys_p256dh`,
        // `keys_auth`, base64url as the browser gave them; NULL for FCM and APNs), which the view gains
        // while it is ours (an adopter's view without them lists no Web Push device the run can
        // encrypt to), and `webpush` joins the providers the tables admit. The checks are added NOT
        // VALID: every existing row passed the narrower check, so a scan of the outbox (under the lock
        // the change takes until the migration commits) would prove nothing; new rows are checked.
        """
        ALTER TABLE digest_import_devices ADD COLUMN keys_p256dh text, ADD COLUMN keys_auth text;
        ALTER TABLE digest_import_devices DROP CONSTRAINT digest_import_devices_provider_check,
            ADD CONSTRAINT digest_import_devices_provider_check CHECK (provider IN ('fcm', 'apns', 'webpush')) NOT VALID;
        ALTER TABLE digest_outbox DROP CONSTRAINT digest_outbox_provider_check,
            ADD CONSTRAINT digest_outbox_provider_check CHECK (provider IN ('fcm', 'apns', 'webpush')) NOT VALID;
        DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_views WHERE viewname = 'digest_devices' AND schemaname = current_schema() AND definition LIKE '%digest_import_devices%') THEN CREATE OR REPLACE VIEW digest_devices AS SELECT user_id, token, platform, registered_at, list_position, provider, topic, keys_p256dh, keys_auth FROM digest_import_devices; END IF; END $$
        """,
        // 16: test sends (docs/004, `digest send-test`): a message sent to an editor's own device is
        // never in the outbox; its id is kept here so that `digest collect` takes the device's events,
        // which go to their own table and into no report; the sends a minute per device are counted
        // from it.
        """
        CREATE TABLE digest_test_sends (
            message_id text PRIMARY KEY,
            sent_at timestamptz NOT NULL,
            device text NOT NULL,
            user_id text NOT NULL,
            week text NOT NULL,
            provider text NOT NULL,
            platform text NOT NULL,
            variant text NOT NULL
        );
        CREATE INDEX digest_test_sends_device ON digest_test_sends (device, sent_at);
        CREATE TABLE digest_test_events (
            message_id text NOT NULL,
            type text NOT NULL,
            action text NOT NULL DEFAULT '',
            at timestamptz NOT NULL,
            received_at timestamptz NOT NULL,
            PRIMARY KEY (message_id, type, action)
        );
        """,
        // 17: reader preferences (docs/005, "Reader preferences"): digest's own table of them, one row
        // per reader who ever had one stored, with the version the API's If-Match compares (1 when
        // first stored, raised by every change, `off` included; `off` itself stays `opted_out` of
        // `digest_users`); the view the run reads, created only where no relation of its name exists
        // (a publisher may create their own over their settings before migrating, and digest then
        // stores none); every change, by import, API, command line or button, in
        // `digest_preference_changes` (`before` and `after` as `json`: the text `ReaderPreferences.json`
        // wrote, kept as given), read per reader newest first. Tables and index only if absent, like
        // the view.
        """
        CREATE TABLE IF NOT EXISTS digest_import_reader_preferences (
            id text COLLATE "C" PRIMARY KEY REFERENCES digest_import_users (id) ON DELETE CASCADE,
            every integer NOT NULL DEFAULT 1 CHECK (every IN (1, 2, 4)),
            from_week text,
            paused_until date,
            follow text[] NOT NULL DEFAULT '{}',
            mute text[] NOT NULL DEFAULT '{}',
            version bigint NOT NULL DEFAULT 1
        );
        DO $$ BEGIN IF to_regclass('digest_reader_preferences') IS NULL THEN CREATE VIEW digest_reader_preferences AS SELECT id, every, from_week, paused_until, follow, mute, version FROM digest_import_reader_preferences; END IF; END $$;
        CREATE TABLE IF NOT EXISTS digest_preference_changes (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            user_id text COLLATE "C" NOT NULL,
            at timestamptz NOT NULL,
            source text NOT NULL CHECK (source IN ('import', 'api', 'cli', 'action')),
            message_id text,
            before json NOT NULL,
            after json NOT NULL
        );
        CREATE INDEX IF NOT EXISTS digest_preference_changes_user ON digest_preference_changes (user_id, at, id)
        """,
        // 18: the notification's buttons (docs/009, "Actions"; docs/005): `fewer` the topics a "Fewer
        // like this" press holds back, a line each, `topic<TAB>until` (Unix seconds; NULL for none),
        // changed only by presses, and in digest's own view (appended: a publisher's view stays as it
        // is, and one without the column reads as none); a change's `action` (`fewer`, `pause`, `off`;
        // NULL for other sources) for "the first press of a week wins".
        """
        ALTER TABLE digest_import_reader_preferences ADD COLUMN IF NOT EXISTS fewer text;
        ALTER TABLE digest_preference_changes ADD COLUMN IF NOT EXISTS action text;
        DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_views WHERE viewname = 'digest_reader_preferences' AND schemaname = current_schema() AND definition LIKE '%digest_import_reader_preferences%') THEN CREATE OR REPLACE VIEW digest_reader_preferences AS SELECT id, every, from_week, paused_until, follow, mute, version, fewer FROM digest_import_reader_preferences; END IF; END $$
        """,
    ]

    /// The version a store has once every migration ran.
    package static var latestVersion: Int { migrations.count }

    /// Applies the migrations the database lacks; returns the versions before and after.
    static func migrate(_ pool: PostgresPool) async throws -> (from: Int, to: Int) {
        let location = pool.location
        return try await pool.transaction { connection -> (from: Int, to: Int) in
            // One migrator at a time; the lock ends with the transaction.
            try await connection.run("SELECT pg_advisory_xact_lock(7438061)")
            try await connection.run("CREATE TABLE IF NOT EXISTS digest_schema (version integer NOT NULL)")
            let current = try await version(connection) ?? 0
            guard current <= migrations.count else {
                throw PostgresStoreError(
                    "\(location): schema version \(current) is newer than this digest (\(migrations.count)): upgrade digest", kind: .configuration)
            }
            for index in current..<migrations.count {
                // The extended protocol takes one statement at a time; no statement here holds ";\n".
                for statement in migrations[index].components(separatedBy: ";\n") {
                    let trimmed = statement.trimmingCharacters(in: .whitespacesAndNewlines)
                    if !trimmed.isEmpty { try await connection.run(PostgresQuery(unsafeSQL: trimmed)) }
                }
                try await connection.run("DELETE FROM digest_schema")
                try await connection.run("INSERT INTO digest_schema VALUES (\(index + 1))")
            }
            return (current, migrations.count)
        }
    }

    /// The schema version, or `nil` when the database has no digest schema.
    static func version(_ connection: PostgresConnection) async throws -> Int? {
        let exists = try await connection.rows("SELECT to_regclass('digest_schema') IS NOT NULL")
        guard try exists.first?.decode(Bool.self) == true else { return nil }
        return try await connection.rows("SELECT coalesce(max(version), 0) FROM digest_schema").first?.decode(Int.self)
    }

    /// Fails with one line telling what to run unless `version` (nil: no digest schema) is current.
    static func requireCurrent(_ version: Int?, location: PostgresLocation) throws(PostgresStoreError) {
        guard let version, version >= migrations.count else {
            throw PostgresStoreError(
                "\(location): the digest schema is missing or old (version \(version ?? 0) of \(migrations.count)): run `digest migrate --db <url>` first",
                kind: .configuration)
        }
        guard version == migrations.count else {
            throw PostgresStoreError(
                "\(location): schema version \(version) is newer than this digest (\(migrations.count)): upgrade digest", kind: .configuration)
        }
    }
}
