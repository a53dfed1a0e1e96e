ALTER TABLE `message` ADD `finish` text;--> statement-breakpoint
ALTER TABLE `message` ADD `time_completed` integer;--> statement-breakpoint
CREATE INDEX `message_type_finish_idx` ON `message` (`type`,`finish`);--> statement-breakpoint
ALTER TABLE `session` ADD `parent_id` text;--> statement-breakpoint
CREATE INDEX `session_parent_id_idx` ON `session` (`parent_id`);--> statement-breakpoint
-- Backfill the new columns from the JSON records written before them (a failed Step's finish is "error").
UPDATE `message` SET `finish` = coalesce(json_extract(`info`, '$.finish'), CASE WHEN json_extract(`info`, '$.error') IS NOT NULL THEN 'error' END), `time_completed` = json_extract(`info`, '$.time.completed') WHERE `type` = 'assistant';--> statement-breakpoint
UPDATE `session` SET `parent_id` = json_extract(`info`, '$.parentID');
