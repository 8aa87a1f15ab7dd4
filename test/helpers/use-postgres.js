// Set by the e2e-postgres jest project: startTestApp then runs each app on a fresh PostgreSQL
// database instead of a SQLite file.
process.env.TEST_ENGINE = 'postgres';
