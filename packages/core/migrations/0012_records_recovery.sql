ALTER TABLE `message` ADD `pending_work` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `message_pending_work_idx` ON `message` (`session_id`) WHERE pending_work <> 0;--> statement-breakpoint
ALTER TABLE `nested_instruction` ADD `position` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `session_input_unpromoted_idx` ON `session_input` (`session_id`) WHERE promoted_seq IS NULL;--> statement-breakpoint
-- Backfill: open Steps, then each session's latest conversation message when a Step should continue after it.
UPDATE `message` SET `pending_work` = 2 WHERE `type` = 'assistant' AND json_extract(`info`, '$.finish') IS NULL AND json_extract(`info`, '$.error') IS NULL;--> statement-breakpoint
UPDATE `message` SET `pending_work` = 1 WHERE `pending_work` = 0 AND `id` IN (
  SELECT m.`id` FROM `message` m
  WHERE m.`seq` = (SELECT max(c.`seq`) FROM `message` c WHERE c.`session_id` = m.`session_id` AND c.`type` IN ('user', 'synthetic', 'assistant'))
    AND (m.`type` IN ('user', 'synthetic') OR (json_extract(m.`info`, '$.finish') = 'tool-calls' AND json_extract(m.`info`, '$.error') IS NULL))
);--> statement-breakpoint
-- The noted order was the rowid order.
UPDATE `nested_instruction` SET `position` = rowid;
