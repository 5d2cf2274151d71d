/** JSON values as the API objects we emit hold them (plain data, no classes). */
export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type JsonObject = { [k: string]: Json };
