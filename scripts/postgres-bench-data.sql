-- The PostgreSQL benchmark's history, generated in the server (scripts/bench-postgres.sh runs it
-- with psql after `digest migrate`). Shaped like the demo's and digest-bench's history
-- (Sources/DigestDemo/DemoHistory.swift, Benchmarks/Sources/digest-bench/Generate.swift), at scale:
--   users     ids u1…uN; locales as in Templates/ (en, pl, ru, zh-Hans and regional variants, 1% fr-FR
--             that falls back to English); 13 time zones, 0.5% an unknown one (Mars/Olympus);
--             3% opted out; 2% without devices, the others 1–3 devices on android/ios/web with
--             169-character FCM-like tokens (22 characters, ":APA91b", 140 more);
--   articles  a1…aM in four languages (en, pl, ru, zh-Hans) round robin, headlines like the demo's
--             (emoji, flags, CJK, braces), 1–3 distinct topics of 18, 70% with an image_url, published
--             one after another over the W weeks before the week's end, 2–18 reading minutes;
--   reads     exactly R, over the week and the W - 1 weeks before it (a user in ten reads only in the
--             weeks before: the "change against last week" has both signs); 70% of reads go to a user
--             drawn uniformly, 30% to the tenth of users whose number ends in 0 (heavy readers:
--             ~74 reads against ~14 at the defaults); each read is of an article published before it,
--             mostly one of the 60 latest, then moved to the nearest article (earlier if there is
--             one) in the language read: the reader's locale's (English for fr-FR), or for a reader
--             in four, a read in three, a second one (English; Russian for English readers);
--   outbox    the D previous weeks' digests (week - 1, week - 2, …): for every user with devices who
--             is not opted out, one `sent` row a week (dedupe key `<week>:<user id>:<sha256 of the
--             first device's token>`, that device's platform, message '{}', report
--             {"variant":"BigText","picks":[five article ids drawn from all articles]}), and those
--             picks in digest_picks, as digest-bench generate writes them for SQLite.
-- Deterministic: every draw is a hash of (row number, draw, seed), so the same variables give the
-- same rows. The history tables' and the outbox's constraints and indexes are dropped while loading
-- and then rebuilt from the definitions the migrations left (bench-postgres.sh checks the schema
-- dump is unchanged).
--
-- Variables (psql -v): users (1000000), reads (20000000), articles (40000), weeks (4, at least 2),
-- digests (2, the previous weeks in the outbox), week (2026-W46), seed (2026). The defaults keep
-- the weekly density of the two-week history they replaced (10,000,000 reads, 20,000 articles).

\set ON_ERROR_STOP on
\if :{?users} \else \set users 1000000 \endif
\if :{?reads} \else \set reads 20000000 \endif
\if :{?articles} \else \set articles 40000 \endif
\if :{?weeks} \else \set weeks 4 \endif
\if :{?digests} \else \set digests 2 \endif
\if :{?week} \else \set week 2026-W46 \endif
\if :{?seed} \else \set seed 2026 \endif
\timing on

SET maintenance_work_mem = '1GB';
SET work_mem = '256MB';

-- A uniform draw in [0, 1) from (n, draw): 53 bits of a seeded 64-bit hash.
CREATE FUNCTION pg_temp.r(n bigint, draw int) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ((hashint8extended(n, :seed::bigint * 1000 + draw) >> 11) & 9007199254740991)::float8 / 9007199254740992.0;

-- An integer in [0, k).
CREATE FUNCTION pg_temp.below(n bigint, draw int, k bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN floor(pg_temp.r(n, draw) * k)::bigint;

-- The week's end (Monday 00:00 UTC after it) and the start of the W weeks before it, as epoch seconds;
-- the reads of a user in ten end where the week starts.
SELECT extract(epoch FROM (to_date(replace(:'week', 'W', ''), 'IYYY-IW') + 7)::timestamp AT TIME ZONE 'UTC')::bigint AS week_end \gset
SELECT :week_end - :weeks * 7 * 86400 AS window_start, :weeks * 7 * 86400 - 3600 AS span,
    (:weeks - 1) * 7 * 86400 AS before_week \gset
-- Article n (1-based) comes out at window_start + (n - 1 + draw) * span / articles: in order, so the
-- articles out before an instant t are exactly 1 … floor((t - window_start) * articles / span).

BEGIN;
-- The preferences tables (migration 17) reference digest_import_users: emptied with it.
TRUNCATE digest_import_reads, digest_import_devices, digest_import_articles, digest_import_users,
    digest_import_reader_preferences, digest_preference_changes,
    digest_dead_tokens, digest_outbox, digest_picks, digest_run_chunks, digest_runs, digest_zone_runs;

-- Loading is faster without the history tables' constraints and indexes: note whatever the
-- migrations defined (so a later migration's index is rebuilt too), drop it, rebuild it after loading.
CREATE TEMP TABLE bench_saved_constraints ON COMMIT DROP AS
SELECT conrelid::regclass::text AS tbl, conname, contype, pg_get_constraintdef(oid) AS def
FROM pg_constraint
WHERE (conrelid IN ('digest_import_users'::regclass, 'digest_import_devices'::regclass,
                    'digest_import_articles'::regclass, 'digest_import_reads'::regclass, 'digest_outbox'::regclass)
       AND contype IN ('p', 'u', 'f', 'x'))
   -- Other tables' foreign keys to them (the preferences' to digest_import_users, migration 17): a
   -- primary key they depend on cannot be dropped before them.
   OR (contype = 'f' AND confrelid IN ('digest_import_users'::regclass, 'digest_import_devices'::regclass,
                                       'digest_import_articles'::regclass, 'digest_import_reads'::regclass,
                                       'digest_outbox'::regclass));
CREATE TEMP TABLE bench_saved_indexes ON COMMIT DROP AS
SELECT indexrelid::regclass::text AS name, pg_get_indexdef(indexrelid) AS def
FROM pg_index
WHERE indrelid IN ('digest_import_users'::regclass, 'digest_import_devices'::regclass,
                   'digest_import_articles'::regclass, 'digest_import_reads'::regclass, 'digest_outbox'::regclass)
  AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = indexrelid AND c.contype IN ('p', 'u', 'x'));
DO $$
DECLARE c record;
BEGIN
  FOR c IN SELECT * FROM bench_saved_constraints ORDER BY contype = 'f' DESC LOOP
    EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', c.tbl, c.conname);
  END LOOP;
  FOR c IN SELECT * FROM bench_saved_indexes LOOP
    EXECUTE format('DROP INDEX %s', c.name);
  END LOOP;
END $$;

\echo users
INSERT INTO digest_import_users (id, locale, time_zone, opted_out)
SELECT 'u' || n,
    CASE WHEN pg_temp.r(n, 1) < 0.01 THEN 'fr-FR'
        ELSE (ARRAY['en', 'en-GB', 'en-US', 'pl', 'pl-PL', 'ru', 'ru-RU', 'zh-Hans', 'zh-CN'])[1 + pg_temp.below(n, 2, 9)] END,
    CASE WHEN pg_temp.r(n, 3) < 0.005 THEN 'Mars/Olympus'
        ELSE (ARRAY['Europe/Warsaw', 'Europe/London', 'Europe/Moscow', 'America/New_York', 'America/Los_Angeles',
            'America/Sao_Paulo', 'Asia/Shanghai', 'Asia/Kolkata', 'Asia/Kathmandu', 'Australia/Sydney',
            'Pacific/Kiritimati', 'Pacific/Pago_Pago', 'America/St_Johns'])[1 + pg_temp.below(n, 4, 13)] END,
    pg_temp.r(n, 5) < 0.03
FROM generate_series(1, :users::bigint) n;

-- Device d of user n: its token and platform (the outbox rows below name device 1's).
CREATE FUNCTION pg_temp.token(n bigint, d int) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (SELECT substr(b64, 1, 22) || ':APA91b' || substr(b64, 23, 140)
    FROM (SELECT int8send(n) || int4send(d) || int8send(:seed::bigint) AS key) k
    CROSS JOIN LATERAL (SELECT replace(replace(replace(encode(
        sha256(key || '\x01'::bytea) || sha256(key || '\x02'::bytea) || sha256(key || '\x03'::bytea) || sha256(key || '\x04'::bytea),
        'base64'), E'\n', ''), '+', '-'), '/', '_') AS b64) t);
CREATE FUNCTION pg_temp.platform(n bigint, d int) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (ARRAY['android', 'ios', 'web'])[1 + pg_temp.below(n * 4 + d, 8, 3)];

\echo devices
INSERT INTO digest_import_devices (user_id, token, platform)
SELECT 'u' || n, pg_temp.token(n, d::int), pg_temp.platform(n, d::int)
FROM generate_series(1, :users::bigint) n
CROSS JOIN LATERAL generate_series(1, CASE WHEN pg_temp.r(n, 6) < 0.02 THEN 0 ELSE 1 + pg_temp.below(n, 7, 3) END) d;

\echo articles
INSERT INTO digest_import_articles (id, title, url, image_url, topics, published_at, reading_minutes, language)
SELECT 'a' || n,
    CASE pg_temp.below(n, 30, 10)
        WHEN 0 THEN headline || ' 🚀'
        WHEN 1 THEN '👨‍👩‍👧‍👦 ' || headline
        WHEN 2 THEN headline || ' 🇵🇱🇺🇦'
        WHEN 3 THEN headline || ' {{notATag}}'
        ELSE headline END,
    'https://news.digest.example/' || language || '/a' || n,
    CASE WHEN pg_temp.r(n, 21) < 0.7 THEN 'https://images.digest.example/a' || n || '.jpg' END,
    topics,
    to_timestamp(:window_start + (n - 1 + pg_temp.r(n, 22)) * :span / :articles),
    2 + pg_temp.below(n, 23, 17),
    language
FROM generate_series(1, :articles::bigint) n
CROSS JOIN LATERAL (SELECT (ARRAY['en', 'pl', 'ru', 'zh-Hans'])[1 + (n - 1) % 4] AS language) l
CROSS JOIN LATERAL (
    SELECT (ARRAY[
        topic_names[1 + first_topic],
        topic_names[1 + (first_topic + 1 + pg_temp.below(n, 26, 8)) % 18],
        topic_names[1 + (first_topic + 9 + pg_temp.below(n, 27, 8)) % 18]])[1:1 + pg_temp.below(n, 25, 3)] AS topics
    FROM (SELECT ARRAY['swift', 'linux', 'databases', 'security', 'ai', 'design', 'science', 'climate', 'space', 'health',
            'economy', 'football', 'music', 'cinema', 'travel', 'food', 'history', 'books'] AS topic_names,
        pg_temp.below(n, 24, 18) AS first_topic) f) t
CROSS JOIN LATERAL (
    SELECT CASE language
        WHEN 'pl' THEN ARRAY['Dlaczego', 'Jak', 'Co dalej:', 'Raport:', 'Wywiad:', 'Pięć lekcji:']
        WHEN 'ru' THEN ARRAY['Почему', 'Как', 'Что дальше:', 'Репортаж:', 'Интервью:', 'Пять уроков:']
        WHEN 'zh-Hans' THEN ARRAY['为什么', '深度：', '观察：', '专访：', '五个教训：']
        ELSE ARRAY['Why', 'How', 'What next:', 'Report:', 'Interview:', 'Five lessons:'] END AS openers,
    CASE language
        WHEN 'pl' THEN ARRAY['zespoły przechodzą na nowe narzędzia', 'miasta walczą z upałem', 'startupy zmieniają rynek',
            'naukowcy czytają dane z orbity', 'biblioteki wracają do łask', 'kibice planują sezon']
        WHEN 'ru' THEN ARRAY['команды переходят на новые инструменты', 'города борются с жарой', 'стартапы меняют рынок',
            'учёные читают данные с орбиты', 'библиотеки снова в моде', 'болельщики ждут сезона']
        WHEN 'zh-Hans' THEN ARRAY['越来越多的团队开始使用新工具', '城市如何应对高温', '初创公司正在改变市场', '科学家解读轨道数据',
            '图书馆重新受到欢迎']
        ELSE ARRAY['teams are moving to new tools', 'cities are fighting the heat', 'start-ups are changing the market',
            'scientists read data from orbit', 'libraries are back in fashion', 'fans are planning the season'] END AS subjects,
    CASE language
        WHEN 'pl' THEN ARRAY['', ' — analiza po roku testów', ' i co z tego wynika dla czytelników w Polsce', ' (część 2)',
            ': żółć, gęśl i jaźń w nowym wydaniu']
        WHEN 'ru' THEN ARRAY['', ' — разбор после года испытаний', ' и что это значит для читателей', ' (часть 2)']
        WHEN 'zh-Hans' THEN ARRAY['', '——一年测试之后的深度分析', '以及未来的发展方向', '（下）']
        ELSE ARRAY['', ' — an analysis after a year of testing in production', ' and what it means for readers',
            ' (part 2)'] END AS endings,
    CASE WHEN language = 'zh-Hans' THEN '' ELSE ' ' END AS separator) words
CROSS JOIN LATERAL (
    SELECT openers[1 + pg_temp.below(n, 31, cardinality(openers))] || separator
        || subjects[1 + pg_temp.below(n, 32, cardinality(subjects))]
        || endings[1 + pg_temp.below(n, 33, cardinality(endings))] || separator || '#' || topics[1] AS headline) h;

\echo reads
-- The languages a user reads, as indexes into the round robin (0 en, 1 pl, 2 ru, 3 zh-Hans): the
-- locale's (draws 1 and 2, as for the users above; fr-FR reads English), and for a user in four a
-- second one (English, or Russian for English readers).
CREATE FUNCTION pg_temp.own_language(u bigint) RETURNS int
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN pg_temp.r(u, 1) < 0.01 THEN 0 ELSE (ARRAY[0, 0, 0, 1, 1, 2, 2, 3, 3])[1 + pg_temp.below(u, 2, 9)] END;

INSERT INTO digest_import_reads (user_id, read_at, article_id, seconds)
SELECT 'u' || u, to_timestamp(:window_start + offset_s), 'a' || article,
    20 + pg_temp.below(i, 47, (2 + pg_temp.below(article, 23, 17)) * 90 - 19)
-- (OFFSET 0 keeps each step's values computed once a row: without it the planner inlines them into
-- one expression that recomputes every step wherever a later one names it.)
FROM (SELECT i, u, offset_s, available, drawn, language
    FROM (SELECT i, CASE WHEN pg_temp.r(i, 41) < 0.7 THEN 1 + pg_temp.below(i, 42, :users)
            ELSE 10 * (1 + pg_temp.below(i, 42, :users / 10)) END AS u
        FROM generate_series(1, :reads::bigint) i OFFSET 0) who
    -- From the window's second hour to the week's end, or (a user in ten) to the start of the week.
    CROSS JOIN LATERAL (SELECT 3600 + pg_temp.r(i, 43) * (CASE WHEN pg_temp.r(u, 44) < 0.1 THEN :before_week ELSE :weeks * 7 * 86400 END - 3600)
        AS offset_s) t
    CROSS JOIN LATERAL (SELECT least(:articles, floor(offset_s * :articles / :span))::bigint AS available) a
    CROSS JOIN LATERAL (SELECT CASE WHEN pg_temp.r(i, 45) < 0.7 THEN available - pg_temp.below(i, 46, least(available, 60))
        ELSE 1 + pg_temp.below(i, 46, available) END AS drawn) p
    -- The language of this read.
    CROSS JOIN LATERAL (SELECT CASE WHEN pg_temp.r(u, 48) < 0.25 AND pg_temp.r(i, 49) < 0.33
        THEN CASE pg_temp.own_language(u) WHEN 0 THEN 2 ELSE 0 END ELSE pg_temp.own_language(u) END AS language) l
    OFFSET 0) d
-- How far back the nearest article in that language is (article n is in language (n - 1) % 4).
CROSS JOIN LATERAL (SELECT ((drawn - 1 - language) % 4 + 4) % 4 AS back) b
CROSS JOIN LATERAL (SELECT CASE WHEN drawn - back >= 1 THEN drawn - back
    WHEN drawn + 4 - back <= available THEN drawn + 4 - back ELSE drawn END AS article) m;

\echo previous digests
-- Week - w (w = 1 … digests), due on the Monday after it at 09:00 UTC, as digest-bench generate has them.
INSERT INTO digest_outbox (dedupe_key, week, user_id, platform, variant, message, report, available_at, state,
                           attempts, created_at, sent_at)
SELECT previous_week || ':u' || n || ':' || encode(sha256(convert_to(pg_temp.token(n, 1), 'UTF8')), 'hex'),
    previous_week, 'u' || n, pg_temp.platform(n, 1), 'BigText', '{}'::jsonb,
    jsonb_build_object('variant', 'BigText', 'picks', (
        SELECT jsonb_agg('a' || (1 + pg_temp.below((n * 64 + w) * 8 + k, 50, :articles)) ORDER BY k)
        FROM generate_series(1, 5) k)),
    due, 'sent', 1, due - interval '1 hour', due
FROM generate_series(1, :users::bigint) n
CROSS JOIN generate_series(1, :digests) w
CROSS JOIN LATERAL (SELECT to_timestamp(:week_end - 7 * 86400 * w) AS monday_after) m
CROSS JOIN LATERAL (SELECT to_char(monday_after AT TIME ZONE 'UTC' - interval '1 day', 'IYYY-"W"IW') AS previous_week,
    monday_after + interval '9 hours' AS due) d
WHERE pg_temp.r(n, 5) >= 0.03 AND pg_temp.r(n, 6) >= 0.02
ORDER BY w DESC, n;

-- Their picks, as the run's ledger keeps them beside the outbox rows it writes.
INSERT INTO digest_picks (user_id, week, picks)
SELECT user_id, week, ARRAY(SELECT jsonb_array_elements_text(report->'picks'))
FROM digest_outbox WHERE state = 'sent'
ORDER BY user_id, week;

\echo constraints and indexes
DO $$
DECLARE c record;
BEGIN
  FOR c IN SELECT * FROM bench_saved_constraints ORDER BY contype = 'f', tbl, conname LOOP
    EXECUTE format('ALTER TABLE %s ADD CONSTRAINT %I %s', c.tbl, c.conname, c.def);
  END LOOP;
  FOR c IN SELECT * FROM bench_saved_indexes ORDER BY name LOOP
    EXECUTE c.def;
  END LOOP;
END $$;

COMMIT;

\echo vacuum analyze
VACUUM (ANALYZE) digest_import_users, digest_import_devices, digest_import_articles, digest_import_reads, digest_outbox,
    digest_picks;
