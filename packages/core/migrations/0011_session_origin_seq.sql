-- A session's session.created is now its log's origin, seq 0, so its durable events start at seq 1.
-- Sessions written before that have session.created at seq 1: every seq of theirs moves down by one,
-- in the log and in each table that records one. Negating first keeps the unique (session, seq)
-- indexes valid at every row of the update.
CREATE TABLE `renumbered_session` (`id` text PRIMARY KEY NOT NULL);--> statement-breakpoint
INSERT INTO `renumbered_session` (`id`) SELECT `aggregate_id` FROM `event` WHERE `seq` = 1 AND `type` = 'session.created';--> statement-breakpoint
UPDATE `event` SET `seq` = -`seq` WHERE `aggregate_id` IN (SELECT `id` FROM `renumbered_session`);--> statement-breakpoint
UPDATE `event` SET `seq` = -`seq` - 1 WHERE `seq` < 0;--> statement-breakpoint
UPDATE `event_sequence` SET `seq` = `seq` - 1 WHERE `aggregate_id` IN (SELECT `id` FROM `renumbered_session`);--> statement-breakpoint
UPDATE `message` SET `seq` = -`seq` WHERE `session_id` IN (SELECT `id` FROM `renumbered_session`);--> statement-breakpoint
UPDATE `message` SET `seq` = -`seq` - 1 WHERE `seq` < 0;--> statement-breakpoint
UPDATE `session_input` SET `admitted_seq` = `admitted_seq` - 1, `promoted_seq` = `promoted_seq` - 1 WHERE `session_id` IN (SELECT `id` FROM `renumbered_session`);--> statement-breakpoint
UPDATE `instruction_checkpoint` SET `baseline_seq` = `baseline_seq` - 1, `compaction_seq` = `compaction_seq` - 1 WHERE `session_id` IN (SELECT `id` FROM `renumbered_session`);--> statement-breakpoint
UPDATE `session_revert` SET `from_seq` = `from_seq` - 1, `to_seq` = -`to_seq` WHERE `session_id` IN (SELECT `id` FROM `renumbered_session`);--> statement-breakpoint
UPDATE `session_revert` SET `to_seq` = -`to_seq` - 1 WHERE `to_seq` < 0;--> statement-breakpoint
DROP TABLE `renumbered_session`;
