import { MigrationInterface, QueryRunner } from 'typeorm';
import {
  createEventTrigger,
  dropEventTrigger,
  type EventTrigger,
} from '../../../platform/events';

/** Frozen with this migration: a later change to the trigger is a migration of its own. */
const PLANT_UPDATED: EventTrigger = {
  type: 'plant.updated',
  table: 'plants',
  on: 'UPDATE',
  fields: { id: 'id', name: 'name', tag: 'tag' },
};

/**
 * Expand: plants gain a version, their ETag (docs/decisions.md, "Updates"), and a change
 * writes plant.updated in the same statement, as an add and a delete write theirs. Existing
 * plants are at version 1. The previous release inserts without the column, which its
 * default fills, and never changes a plant, so it runs on this schema unchanged
 * (docs/decisions.md, "Two releases on one schema").
 */
export class PlantVersions1795960000000 implements MigrationInterface {
  name = 'PlantVersions1795960000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "plants" ADD "version" integer NOT NULL DEFAULT 1`,
    );
    await createEventTrigger(queryRunner, PLANT_UPDATED);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await dropEventTrigger(queryRunner, PLANT_UPDATED);
    await queryRunner.query(`ALTER TABLE "plants" DROP COLUMN "version"`);
  }
}
