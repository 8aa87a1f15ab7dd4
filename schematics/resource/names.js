// @ts-check
'use strict';
const { strings } = require('@angular-devkit/core');
const pluralize = require('pluralize');

const KEBAB_CASE = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;

// identifiers the generated code declares from the name; a reserved word would not compile
const RESERVED_WORDS = new Set(
  (
    'break case catch class const continue debugger default delete do else enum export extends ' +
    'false finally for function if import in instanceof new null return super switch this throw ' +
    'true try typeof var void while with yield let static implements interface package private ' +
    'protected public await'
  ).split(' '),
);

/**
 * Every spelling of the resource's name the templates use, from its plural kebab-case name:
 * `garden-beds` gives the class `GardenBed`, the table `garden_beds`, the scopes
 * `garden-beds:read` and `garden-beds:write`, the event `garden-bed.added`.
 *
 * @param {string} name
 */
function resourceNames(name) {
  if (!KEBAB_CASE.test(name)) {
    throw new Error(
      `"${name}" is not a resource name: use a plural kebab-case name of lowercase letters and digits, such as orders or garden-beds`,
    );
  }
  const singular = pluralize.singular(name);
  if (singular === name || pluralize.plural(singular) !== name) {
    throw new Error(
      `"${name}" is not a plural: name the resource as its route does, such as ${pluralize.plural(name)} (the singular names one item)`,
    );
  }
  const names = {
    /** garden-beds */
    name,
    /** garden-bed */
    singular,
    /** GardenBeds */
    Plural: strings.classify(name),
    /** GardenBed */
    Singular: strings.classify(singular),
    /** gardenBeds */
    plural: strings.camelize(name),
    /** gardenBed */
    one: strings.camelize(singular),
    /** GARDEN_BED */
    CONSTANT: strings.underscore(singular).toUpperCase(),
    /** garden_beds */
    table: strings.underscore(name),
    /** garden beds */
    words: name.replaceAll('-', ' '),
    /** garden bed */
    word: singular.replaceAll('-', ' '),
  };
  for (const identifier of [names.plural, names.one]) {
    if (RESERVED_WORDS.has(identifier)) {
      throw new Error(
        `"${name}" would declare a variable named ${identifier}, a reserved word of TypeScript: choose another name`,
      );
    }
  }
  return names;
}

module.exports = { resourceNames };
