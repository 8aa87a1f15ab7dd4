// the same statements on both engines (the column, and the trigger event-triggers.ts spells)
export { PlantVersions1795960000000 } from '../1795960000000-PlantVersions';
