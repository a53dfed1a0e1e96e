CREATE TABLE `question_request` (
	`id` text PRIMARY KEY NOT NULL,
	`session_id` text NOT NULL,
	`origin` text NOT NULL,
	`info` text NOT NULL,
	`status` text NOT NULL,
	`answers` text,
	`message` text,
	`time_created` integer NOT NULL,
	`time_replied` integer,
	FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `question_request_status_session_idx` ON `question_request` (`status`,`session_id`);